// The Files panel of the chat page (files.templ): the session workspace as
// a tree whose directories load when expanded, and a file view rendered
// and highlighted by the server, with a download link. Fragments come from
// <base>/tree?path= and <base>/view?path=; failures are the API's JSON
// errors. Share-link pages have no panel, so nothing happens there.

import { decorate } from "./util.js";

const panel = document.getElementById("files-panel");
if (panel) setup(panel);

function setup(panel) {
  const base = panel.dataset.base;
  const tree = panel.querySelector("#files-tree");
  const view = panel.querySelector("#files-view");
  const button = document.getElementById("files-button");
  let loaded = false;
  let current = ""; // the path shown in the view
  let viewSeq = 0; // the latest view request wins

  /** Fetches a fragment; throws an Error with the server's message. */
  async function fragment(kind, path) {
    const res = await fetch(`${base}/${kind}?path=${encodeURIComponent(path)}`, {
      credentials: "same-origin",
      headers: { Accept: "application/json" }, // errors as JSON
    });
    if (!res.ok) {
      let msg = `${res.status} ${res.statusText}`;
      try {
        const body = await res.json();
        if (body.error?.message) msg = body.error.message;
      } catch {
        /* not JSON: keep the status */
      }
      throw new Error(msg);
    }
    const box = document.createElement("template");
    box.innerHTML = await res.text();
    return box.content;
  }

  function failure(err) {
    const p = document.createElement("p");
    p.className = "files-error";
    p.setAttribute("role", "alert");
    p.textContent = `Could not load: ${err.message}`;
    return p;
  }

  /** Loads a directory's entries into box (the tree, or a .ft-children). */
  async function load(box, path) {
    box.setAttribute("aria-busy", "true");
    try {
      box.replaceChildren(await fragment("tree", path));
      box.dataset.loaded = "1";
      return true;
    } catch (err) {
      box.replaceChildren(failure(err));
      delete box.dataset.loaded;
      return false;
    } finally {
      box.setAttribute("aria-busy", "false");
    }
  }

  async function toggle(row, open = row.getAttribute("aria-expanded") !== "true") {
    const kids = row.parentElement.querySelector(":scope > .ft-children");
    if (!kids || row.dataset.busy) return;
    if (!open) {
      row.setAttribute("aria-expanded", "false");
      kids.hidden = true;
      return;
    }
    row.setAttribute("aria-expanded", "true");
    kids.hidden = false;
    if (!kids.dataset.loaded) {
      row.dataset.busy = "1";
      await load(kids, row.dataset.path);
      delete row.dataset.busy;
    }
  }

  function markCurrent() {
    for (const r of tree.querySelectorAll(".ft-row[aria-current]")) r.removeAttribute("aria-current");
    const row = tree.querySelector(`.ft-row[data-files-action="open"][data-path="${CSS.escape(current)}"]`);
    row?.setAttribute("aria-current", "true");
  }

  async function show(path) {
    current = path;
    markCurrent();
    const seq = ++viewSeq;
    view.setAttribute("aria-busy", "true");
    let content;
    try {
      content = await fragment("view", path);
    } catch (err) {
      content = failure(err);
    }
    if (seq !== viewSeq) return;
    view.replaceChildren(content);
    decorate(view);
    view.scrollTop = 0;
    view.setAttribute("aria-busy", "false");
  }

  /** Reloads the tree, keeping expanded directories open, and the file. */
  async function refresh() {
    const open = [...tree.querySelectorAll('.ft-row[aria-expanded="true"]')].map((r) => r.dataset.path);
    loaded = await load(tree, ".");
    // Parents come before their children, so each is found once loaded.
    for (const path of open) {
      const row = tree.querySelector(`.ft-row[data-files-action="toggle"][data-path="${CSS.escape(path)}"]`);
      if (row) await toggle(row, true);
    }
    if (current) await show(current);
  }

  function setOpen(open) {
    panel.hidden = !open;
    button?.setAttribute("aria-expanded", String(open));
    if (open) {
      if (!loaded) refresh();
      panel.querySelector(".files-head button")?.focus();
    } else {
      button?.focus();
    }
  }

  document.addEventListener("click", (e) => {
    const el = e.target.closest("[data-files-action]");
    if (!el) return;
    switch (el.dataset.filesAction) {
      case "panel":
        setOpen(panel.hidden);
        break;
      case "close":
        setOpen(false);
        break;
      case "refresh":
        refresh();
        break;
      case "toggle":
        toggle(el);
        break;
      case "open":
        show(el.dataset.path);
        break;
    }
  });
  panel.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && !e.defaultPrevented) {
      e.preventDefault();
      setOpen(false);
    }
  });
}
