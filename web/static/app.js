// Entry point of every page with a script: one WebSocket per tab for the
// sidebar and, on a chat page, the live transcript and its controls. No
// build step, no framework; see docs/ui.md.

import { Socket } from "./socket.js";
import { Transcript } from "./transcript.js";
import { Controls } from "./composer.js";
import { followSessions } from "./sidebar.js";
import { copyFrom, decorate, runCountdowns } from "./util.js";
import "./files.js";
import { WorkspaceBanner, initNewSessionForm } from "./workspace.js";
import { Timeline } from "./timeline.js";
import { EffortControl } from "./effort.js";
import { Subagents } from "./subagent.js";

function socketURL(share) {
  const proto = location.protocol === "https:" ? "wss:" : "ws:";
  const q = share ? `?share=${encodeURIComponent(share)}` : "";
  return `${proto}//${location.host}/ws${q}`;
}

function cycleTheme() {
  const root = document.documentElement;
  const next = { undefined: "light", light: "dark", dark: undefined }[root.dataset.theme];
  try {
    if (next) localStorage.setItem("harness.theme", next);
    else localStorage.removeItem("harness.theme");
  } catch {
    /* storage disabled: the choice lasts for this page */
  }
  if (next) root.dataset.theme = next;
  else delete root.dataset.theme;
}

function pageClicks() {
  document.addEventListener("click", (e) => {
    // The skip link focuses its target without putting "#…" in the URL
    // (a reload would scroll there); without script the fragment does it.
    const skip = e.target.closest(".skip-link");
    if (skip) {
      const target = document.querySelector(skip.getAttribute("href"));
      if (target) {
        e.preventDefault();
        target.focus();
      }
      return;
    }
    const b = e.target.closest("[data-action], [data-copy-from]");
    if (!b) return;
    if (b.dataset.copyFrom) {
      copyFrom(b);
      return;
    }
    switch (b.dataset.action) {
      case "toggle-sidebar":
        document.body.classList.toggle("sidebar-open");
        break;
      case "theme":
        cycleTheme();
        break;
      case "jump-latest":
        location.reload();
        break;
    }
  });
}

function startChat(socket, chat) {
  const connection = document.createElement("span");
  connection.className = "connection";
  connection.id = "connection";
  connection.hidden = true;
  connection.textContent = "reconnecting…";
  chat.querySelector(".chat-head")?.append(connection);

  const controls = new Controls(chat, socket);
  const workspace = new WorkspaceBanner(chat);
  const effort = new EffortControl(chat, (op, fields) => controls.call(op, fields));
  // The timeline panel is built when it first opens; until then it
  // ignores events.
  const timeline = new Timeline(chat, () => transcript);
  const transcript = new Transcript(chat, {
    onEvent: (ev) => {
      controls.onEvent(ev);
      effort.onEvent(ev);
      timeline.onEvent(ev);
      // The durable outcome also ends the banner (the live push may have
      // come before this page subscribed).
      if (ev.type === "workspace/ready" || ev.type === "workspace/failed") workspace.onProgress({ done: true });
    },
    onGap: () => socket.resubscribe(chat.dataset.session),
  });
  let downTimer = 0;
  socket.onState = (state) => {
    // A quick reconnect stays silent; a longer outage says so.
    clearTimeout(downTimer);
    if (state === "open") connection.hidden = true;
    else downTimer = setTimeout(() => (connection.hidden = false), 1500);
  };
  socket.follow(chat.dataset.session, {
    since: () => transcript.since(),
    // The answer carries the current context meter (fresher than the page
    // after a compaction or a reconnect).
    onSubscribed: (res) => controls.setContext(res.context),
    onPush: (msg) => {
      if (msg.ch === "session/event" || msg.ch === "session/events") transcript.push(msg);
      else if (msg.ch === "replay/done") chat.dataset.synced = String(msg.head);
      else if (msg.ch === "workspace/progress") workspace.onProgress(msg.workspace);
      else if (msg.ch === "session/closed") {
        if (msg.reason === "unloaded") socket.resubscribe(chat.dataset.session);
        else gone(chat, "You no longer have access to this session.");
      } else controls.onPush(msg);
    },
    onFail: (err) => gone(chat, err.code === "not_found" || err.code === "unauthorized"
      ? "This session is no longer available."
      : `The live view stopped: ${err.message || err.code}.`),
  });
  // Task cards follow their subagents' own logs on this socket.
  const subagents = new Subagents(chat, socket);
  window.harness = { socket, transcript, controls, timeline, subagents }; // for tests and curious people
}

function gone(chat, text) {
  const banner = document.createElement("div");
  banner.className = "error gone";
  banner.setAttribute("role", "alert");
  banner.textContent = text;
  chat.querySelector(".chat-head")?.after(banner);
  chat.querySelector("#composer")?.remove();
}

function main() {
  pageClicks();
  initNewSessionForm();
  decorate(document.body);
  runCountdowns();
  const chat = document.getElementById("chat");
  const share = chat?.dataset.share || "";
  const socket = new Socket(socketURL(share));
  if (!share) followSessions(socket);
  if (chat) startChat(socket, chat);
  socket.start();
}

main();
