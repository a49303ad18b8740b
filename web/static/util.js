// Small page helpers: decorating rendered items (copy buttons, local
// clocks), countdowns, and reading the CSRF token.

/** The login session's CSRF token, for cookie-authenticated writes. */
export function csrfToken() {
  return document.querySelector('meta[name="csrf-token"]')?.content || "";
}

const timeFmt = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit" });

/** Adds what rendered HTML leaves to the client: copy buttons on code
 * blocks and local times. */
export function decorate(root) {
  if (!(root instanceof Element)) return;
  for (const head of root.querySelectorAll(".code-head")) {
    if (head.querySelector(".copy")) continue;
    const b = document.createElement("button");
    b.type = "button";
    b.className = "icon copy";
    b.title = "Copy code";
    b.setAttribute("aria-label", "Copy code");
    b.dataset.copyFrom = "pre";
    b.dataset.copyScope = ".code";
    b.textContent = "copy";
    head.append(b);
  }
  for (const t of root.querySelectorAll("time[data-time]")) {
    if (t.textContent) continue;
    const d = new Date(Number(t.dataset.time));
    t.dateTime = d.toISOString();
    t.textContent = timeFmt.format(d);
    t.title = d.toLocaleString();
  }
}

/** Copies the text a [data-copy-from] button points at. */
export function copyFrom(button) {
  const scope = button.closest(button.dataset.copyScope || ".item") || document;
  const src = scope.querySelector(button.dataset.copyFrom);
  if (!src) return;
  const text = src.innerText;
  const done = () => {
    button.classList.add("copied");
    setTimeout(() => button.classList.remove("copied"), 1200);
  };
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(text).then(done, () => fallbackCopy(text, done));
  } else {
    fallbackCopy(text, done);
  }
}

function fallbackCopy(text, done) {
  const ta = document.createElement("textarea");
  ta.value = text;
  ta.setAttribute("readonly", "");
  ta.className = "offscreen";
  document.body.append(ta);
  ta.select();
  try {
    document.execCommand("copy");
    done();
  } catch {
    /* nothing more to try */
  }
  ta.remove();
}

/** Updates retry countdowns once a second. */
export function runCountdowns() {
  setInterval(() => {
    for (const el of document.querySelectorAll(".countdown[data-until]")) {
      const left = Number(el.dataset.until) - Date.now();
      el.textContent = left > 0 ? `${Math.ceil(left / 1000)} s` : "now";
    }
  }, 1000);
}
