// Applies the saved theme (system, light or dark) before the first paint.
// A classic script, loaded blocking from <head>; the page has no inline
// scripts.
(function () {
  try {
    var t = localStorage.getItem("harness.theme");
    if (t === "light" || t === "dark") document.documentElement.dataset.theme = t;
  } catch (e) { /* storage disabled: follow the system */ }
})();
