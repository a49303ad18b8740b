// The chat page's controls: the composer (send, queue while running,
// steer, stop and Esc, the slash-command palette), the queue dock (paused after
// Stop: "Run next", "Clear"), approval and question
// panels that take over the composer (and the keyboard focus), the tools
// allowed for the session, status, mode and model, and the context meter.

import { Palette } from "./palette.js";
import { ImageTray } from "./images.js";

// COMPACT is the composer command that compacts the history instead of
// sending a message.
const COMPACT = "/compact";
// How long the outcome of a command stays shown (ms).
const TOAST_MS = 8000;
// The events whose fragments carry the context meter (docs/ui.md).
const METER_EVENTS = new Set(["user/message", "assistant/message", "tool/result", "compaction/end", "model/selected", "request/context"]);

export class Controls {
  /**
   * @param {HTMLElement} chat
   * @param {import("./socket.js").Socket} socket
   */
  constructor(chat, socket) {
    this.chat = chat;
    this.socket = socket;
    this.session = chat.dataset.session;
    this.canWrite = chat.dataset.canWrite === "1";
    this.status = chat.querySelector("#agent-status");
    this.form = chat.querySelector("#composer");
    this.input = chat.querySelector("#composer-input");
    this.hint = chat.querySelector("#composer-hint");
    this.stopBtn = chat.querySelector("#stop-btn");
    this.steerBtn = chat.querySelector("#steer-btn");
    this.queueDock = chat.querySelector("#queue-dock");
    this.takeover = chat.querySelector("#takeover");
    this.toast = chat.querySelector("#toast");
    this.toastTimer = 0;
    this.setStatus(this.status?.dataset.status || "idle");
    this.updateMeter();
    if (this.canWrite && this.form) this.bind();
  }

  bind() {
    this.form.addEventListener("submit", (e) => {
      e.preventDefault();
      this.send("followup");
    });
    this.palette = new Palette(this);
    this.images = new ImageTray(this.chat, (text) => this.say(text));
    this.input.addEventListener("keydown", (e) => {
      if (this.palette.keydown(e)) return;
      if (e.key !== "Enter" || e.isComposing) return;
      if (e.ctrlKey || e.metaKey) {
        e.preventDefault();
        this.send(this.running ? "steer" : "followup");
      } else if (!e.shiftKey) {
        e.preventDefault();
        this.send("followup");
      }
    });
    this.input.addEventListener("input", () => this.autosize());
    this.stopBtn?.addEventListener("click", () => this.stop());
    this.steerBtn?.addEventListener("click", () => this.send("steer"));
    this.chat.querySelector("#mode-select")?.addEventListener("change", (e) => {
      this.call("set_mode", { mode: e.target.value });
    });
    this.chat.querySelector("#model-select")?.addEventListener("change", (e) => {
      const [provider, ...rest] = e.target.value.split("/");
      this.call("set_model", { provider, model: rest.join("/") });
    });
    this.chat.addEventListener("click", (e) => this.onClick(e));
    this.chat.addEventListener("submit", (e) => {
      const form = e.target.closest(".tk-question");
      if (form) {
        e.preventDefault();
        this.answer(form);
      }
    });
    // Escape never decides an approval: it is swallowed inside the panel
    // (no dialog-closing default, no deny by accident: Esc is also "stop
    // the turn", and a denial cannot be taken back).
    this.chat.addEventListener("keydown", (e) => {
      if (e.key === "Escape" && e.target.closest?.(".tk-approval")) {
        e.preventDefault();
        e.stopPropagation();
      }
    });
    document.addEventListener("keydown", (e) => this.panelKeys(e));
    // Esc stops the running turn, unless a panel, dialog, menu or editor
    // has the key (an approval panel swallows its own Escape above).
    document.addEventListener("keydown", (e) => {
      if (e.key !== "Escape" || e.defaultPrevented || e.isComposing || !this.running) return;
      if (e.target.closest?.(".tk-panel, dialog, .menu, .files-panel, .queue-edit")) return;
      e.preventDefault();
      this.stop();
    });
    this.watchTakeover();
    const panel = this.takeover?.querySelector(".tk-panel");
    if (panel) this.focusPanel(panel);
    else this.input.focus();
  }

  /** A panel that appears (pushed live, or on the page) takes the
   * keyboard focus; when the last one goes, the composer gets it back. */
  watchTakeover() {
    if (!this.takeover) return;
    new MutationObserver((records) => {
      let added = null;
      let removed = false;
      for (const r of records) {
        for (const n of r.addedNodes) if (n instanceof Element && n.matches(".tk-panel")) added = n;
        removed ||= r.removedNodes.length > 0;
      }
      if (added) {
        this.focusPanel(added);
      } else if (removed && !this.takeover.querySelector(".tk-panel")) {
        // Back to the composer, unless the reader is typing or working
        // elsewhere (a field, the Files panel, a menu): the focus was on
        // the answered panel, the page (body) or the conversation.
        const a = document.activeElement;
        const busy = a?.isConnected && (a.matches("input, textarea, select, [contenteditable]") || a.closest(".files-panel, .menu[open]"));
        if (!busy) this.input.focus({ preventScroll: true });
      }
    }).observe(this.takeover, { childList: true });
  }

  /** The keys of a pending panel: y allows once and n denies the focused
   * approval (or the first one, when the focus is elsewhere but not in a
   * text field, where y and n are letters); Enter on a question's choice
   * answers it (Chromium does not submit a form from a radio button). */
  panelKeys(e) {
    if (e.defaultPrevented || e.isComposing || e.ctrlKey || e.metaKey || e.altKey) return;
    const t = e.target instanceof Element ? e.target : null;
    if (e.key === "Enter" && !e.shiftKey && t?.matches(".tk-question input[type=radio], .tk-question input[type=checkbox]")) {
      e.preventDefault();
      t.closest("form").requestSubmit();
      return;
    }
    const key = e.key.toLowerCase();
    if ((key !== "y" && key !== "n") || e.repeat) return;
    let panel = t?.closest(".tk-approval");
    if (!panel) {
      if (t && (t.isContentEditable || t.matches("input, textarea, select"))) return;
      panel = this.takeover?.querySelector(".tk-approval");
    }
    if (!panel || panel.classList.contains("busy")) return;
    e.preventDefault();
    panel.querySelector(`[data-action=approve][data-decision=${key === "y" ? "allow" : "deny"}]`)?.click();
  }

  /** Focuses a panel's primary control: "Allow once" on an approval, the
   * first choice of a question. */
  focusPanel(panel) {
    const target = panel.querySelector("[data-focus]") || panel.querySelector("input, textarea, button");
    target?.focus({ preventScroll: true });
  }

  get running() {
    return this.status?.dataset.status === "running";
  }

  autosize() {
    this.input.style.height = "auto";
    this.input.style.height = Math.min(this.input.scrollHeight, 240) + "px";
  }

  async call(op, fields) {
    try {
      const res = await this.socket.request(op, { session: this.session, ...fields });
      this.say("");
      return res;
    } catch (err) {
      this.say(err.message || err.code || "failed");
      throw err;
    }
  }

  say(text) {
    if (this.hint) this.hint.textContent = text;
  }

  async send(mode) {
    const content = this.input.value;
    const withImages = this.images?.count > 0;
    if (!content.trim() && !withImages) return;
    // Exactly "/compact" is a command, never a message; any other text
    // starting with "/" is sent as written.
    if (content.trim() === COMPACT && !withImages) {
      this.input.value = "";
      this.autosize();
      await this.compact();
      return;
    }
    const fields = { content };
    if (withImages) {
      const ids = await this.images.ids();
      if (!ids) return;
      fields.attachments = ids;
    }
    this.input.value = "";
    this.autosize();
    // The same text sent again after a failed send keeps its key: if the
    // first one was stored after all, the server answers with it instead
    // of storing a second copy.
    const same = this.unsent && this.unsent.content === content && this.unsent.mode === mode;
    const key = same ? this.unsent.key : this.socket.newId();
    try {
      await this.socket.sendMessage(mode, { session: this.session, ...fields }, key, (err) =>
        this.say(`${err.message || "not sent yet"} — sending again…`),
      );
      this.say("");
      this.unsent = null;
      if (withImages) this.images.clear();
    } catch (err) {
      this.say(err.message || err.code || "failed");
      this.unsent = { content, mode, key };
      // Keep what was typed (and the images) when the server refused it.
      if (!this.input.value) this.input.value = content;
    }
  }

  stop() {
    this.call("cancel", { keepInbox: true }).catch(() => {});
  }

  /** Runs a manual compaction and says how it went. */
  async compact() {
    this.notify("Compacting the conversation…", "busy", 0);
    try {
      const res = await this.socket.request("compact", { session: this.session });
      const c = res.compaction || {};
      if (c.context) this.setContext(c.context);
      this.notify(c.message || "Compacted.", c.compacted ? "ok" : "info");
    } catch (err) {
      this.notify(compactError(err), "error");
    }
  }

  /** /clear: empties the queue. */
  async clearQueue() {
    try {
      await this.call("inbox.clear", {});
      this.notify("The queue is empty.", "ok");
    } catch (err) {
      this.notify(`Could not clear the queue: ${err.message || err.code}.`, "error");
    }
  }

  /** /help: the commands and the keys, above the composer. */
  showHelp(commands) {
    const dl = document.createElement("dl");
    dl.className = "help-list";
    const row = (k, v) => {
      const dt = document.createElement("dt");
      const code = document.createElement("code");
      code.textContent = k;
      dt.append(code);
      const dd = document.createElement("dd");
      dd.textContent = v;
      dl.append(dt, dd);
    };
    for (const c of commands) row("/" + c.name + (c.args ? " …" : ""), c.desc);
    row("Enter / Shift+Enter", "send / new line");
    row("Ctrl+Enter", "steer the running turn");
    row("Esc", "stop the running turn");
    row("y / n", "allow once / deny a pending approval");
    this.notify(dl, "info", 20000);
  }

  /** Shows a short notice above the composer (text, or a node); ms 0
   * keeps it up. */
  notify(text, kind = "info", ms = TOAST_MS) {
    if (!this.toast) return;
    clearTimeout(this.toastTimer);
    this.toast.replaceChildren();
    if (kind === "busy") {
      const spin = document.createElement("span");
      spin.className = "spinner";
      spin.setAttribute("aria-hidden", "true");
      this.toast.append(spin);
    }
    this.toast.append(text);
    this.toast.dataset.kind = kind;
    this.toast.hidden = false;
    if (ms > 0) this.toastTimer = setTimeout(() => (this.toast.hidden = true), ms);
  }

  onClick(e) {
    const b = e.target.closest("[data-action]");
    if (!b || !this.chat.contains(b)) return;
    const item = b.closest(".queue-item")?.dataset.item;
    switch (b.dataset.action) {
      case "approve": {
        const panel = b.closest("[data-interaction]");
        panel.classList.add("busy");
        this.call("approve", { approval: panel.dataset.interaction, decision: b.dataset.decision })
          .catch(() => panel.classList.remove("busy"));
        break;
      }
      case "revoke-tool":
        this.call("approvals.revoke", { tool: b.dataset.tool }).catch(() => {});
        break;
      case "queue-remove":
        this.call("inbox.remove", { item }).catch(() => {});
        break;
      case "queue-steer":
        this.call("inbox.steer", { item }).catch(() => {});
        break;
      case "queue-edit":
        this.editQueued(b.closest(".queue-item"));
        break;
      case "queue-save": {
        const li = b.closest(".queue-item");
        const text = li.querySelector("textarea").value;
        this.call("inbox.edit", { item, content: text }).catch(() => {});
        break;
      }
      case "queue-cancel":
        this.renderQueue(this.lastQueue || { queued: [], steering: [] });
        break;
      case "queue-run":
        this.call("inbox.run", {}).catch(() => {});
        break;
      case "queue-clear":
        this.call("inbox.clear", {}).catch(() => {});
        break;
      case "retry-turn":
        this.retryTurn(b);
        break;
    }
  }

  /** A failed turn's Retry: the server sends the turn's prompt again as a
   * new message (the `retry` op); the button waits for the answer. */
  async retryTurn(b) {
    b.disabled = true;
    try {
      await this.call("retry", { turn: Number(b.dataset.turn) });
    } catch {
      // call() said why in the composer's hint.
    } finally {
      b.disabled = false;
    }
  }

  answer(form) {
    const answers = [];
    for (const fs of form.querySelectorAll("fieldset[data-question]")) {
      const selected = [...fs.querySelectorAll("input:checked")].map((i) => i.value);
      const custom = fs.querySelector(".tk-custom")?.value.trim() || "";
      const a = { id: fs.dataset.question, selected };
      if (custom) a.custom = custom;
      answers.push(a);
    }
    form.classList.add("busy");
    this.call("answer", { question: form.dataset.interaction, answers }).catch(() => form.classList.remove("busy"));
  }

  // --- pushes ----------------------------------------------------------

  onPush(msg) {
    switch (msg.ch) {
      case "agent/status":
        this.setStatus(msg.status);
        break;
      case "agent/inbox":
        this.lastQueue = msg.queue;
        this.renderQueue(msg.queue);
        break;
      case "interaction/resolved":
        for (const p of this.chat.querySelectorAll("[data-interaction]")) {
          if (p.dataset.interaction === msg.interaction?.id) p.remove();
        }
        break;
      case "approvals/allowed":
        this.renderAllowed(msg.tools || []);
        break;
    }
  }

  /** Shows the tools allowed for this session ("Allow … for this
   * session"), each with a button that revokes it, above the composer. */
  renderAllowed(tools) {
    if (!this.canWrite || !this.form) return;
    let line = this.chat.querySelector("#allowed-tools");
    if (!line) {
      line = document.createElement("div");
      line.id = "allowed-tools";
      line.className = "allowed-tools";
      this.form.before(line);
    }
    const items = tools.map((tool) => {
      const chip = document.createElement("span");
      chip.className = "allowed-tool";
      chip.dataset.tool = tool;
      const name = document.createElement("code");
      name.textContent = tool;
      const revoke = button("✕", "revoke-tool", `Stop allowing ${tool} for this session`);
      revoke.dataset.tool = tool;
      revoke.title = `Ask again before each ${tool} call`;
      chip.append(name, revoke);
      return chip;
    });
    line.replaceChildren(span("allowed-label muted", "Allowed this session:"), ...items);
    line.hidden = tools.length === 0;
  }

  setStatus(status) {
    if (!this.status) return;
    this.status.dataset.status = status;
    this.status.querySelector(".status-text").textContent = status;
    const running = status === "running";
    if (this.stopBtn) this.stopBtn.hidden = !running;
    if (this.steerBtn) this.steerBtn.hidden = !running;
    const send = this.chat.querySelector("#send-btn");
    if (send) send.textContent = running ? "Queue" : "Send";
    if (this.input) {
      this.input.placeholder = running
        ? "The agent is working — Enter queues, Ctrl+Enter steers now, Esc stops"
        : "Message the agent — Enter sends, Shift+Enter adds a line";
    }
    this.updatePaused();
  }

  /** An idle agent with queued messages is paused (after Stop, or a turn
   * that failed): the dock says so and offers "Run next" and "Clear". */
  updatePaused() {
    if (!this.queueDock) return;
    const n = this.queueDock.querySelectorAll("#queue-list > .queue-item").length;
    this.queueDock.classList.toggle("paused", n > 0 && !this.running);
  }

  /** Rebuilds the queue dock from a snapshot (same markup as the page). */
  renderQueue(q) {
    if (!this.queueDock) return;
    const list = this.queueDock.querySelector("#queue-list");
    const items = [];
    for (const m of q.steering || []) items.push(this.queueItem(m, "steer"));
    for (const m of q.queued || []) items.push(this.queueItem(m, "queued"));
    list.replaceChildren(...items);
    this.queueDock.querySelector("#queue-count").textContent = String(items.length);
    this.queueDock.classList.toggle("hidden", items.length === 0);
    this.updatePaused();
  }

  queueItem(m, kind) {
    const li = document.createElement("li");
    li.className = "queue-item";
    li.dataset.item = m.id;
    li.dataset.kind = kind;
    if (kind === "steer") {
      const pill = document.createElement("span");
      pill.className = "pill";
      pill.textContent = "steer";
      li.append(pill);
    }
    const text = document.createElement("span");
    text.className = "queue-text";
    text.textContent = (m.content || []).filter((b) => b.type === "text").map((b) => b.text).join("");
    li.append(text);
    const images = (m.content || []).filter((b) => b.type === "image").length;
    if (images > 0) {
      const pill = document.createElement("span");
      pill.className = "pill queue-images";
      pill.textContent = images === 1 ? "1 image" : `${images} images`;
      li.append(pill);
    }
    if (this.canWrite && kind === "queued") {
      const actions = document.createElement("span");
      actions.className = "queue-actions";
      actions.append(
        button("✎", "queue-edit", "Edit queued message"),
        button("↯", "queue-steer", "Send into the running turn now"),
        button("✕", "queue-remove", "Remove queued message"),
      );
      li.append(actions);
    }
    return li;
  }

  editQueued(li) {
    const text = li.querySelector(".queue-text").textContent;
    const ta = document.createElement("textarea");
    ta.value = text;
    ta.rows = 2;
    ta.className = "queue-edit";
    ta.setAttribute("aria-label", "Edit queued message");
    ta.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && !e.shiftKey) {
        e.preventDefault();
        li.querySelector("[data-action=queue-save]").click();
      } else if (e.key === "Escape") {
        e.preventDefault(); // ends the edit, never stops the turn
        li.querySelector("[data-action=queue-cancel]").click();
      }
    });
    const save = button("Save", "queue-save", "Save the edit");
    save.className = "small";
    const cancel = button("Cancel", "queue-cancel", "Cancel the edit");
    cancel.className = "quiet small";
    li.replaceChildren(ta, save, cancel);
    ta.focus();
  }

  /** The server upserts the meter after the events that change it; the
   * ring is drawn here (inline styles are not allowed). */
  onEvent(ev) {
    if (METER_EVENTS.has(ev.type)) this.updateMeter();
    // The header's mode and model badges come with the event's fragment;
    // the pickers follow too (a change made in another tab or by /model).
    if (ev.type === "permission/mode" && ev.data?.mode) {
      const sel = this.chat.querySelector("#mode-select");
      if (sel) sel.value = ev.data.mode;
    } else if (ev.type === "model/selected" && ev.data?.provider) {
      const sel = this.chat.querySelector("#model-select");
      const v = `${ev.data.provider}/${ev.data.model}`;
      if (sel && [...sel.options].some((o) => o.value === v)) sel.value = v;
    }
  }

  get meter() {
    return this.chat.querySelector("#ctx-meter");
  }

  /** Applies figures {tokens, window, percent} (the subscribe answer, a
   * compaction result) to the meter, with the server's formatting. */
  setContext(c) {
    const m = this.meter;
    if (!m || !c) return;
    const pct = c.window > 0 ? (c.tokens * 100) / c.window : 0;
    m.dataset.used = String(c.tokens);
    m.dataset.window = String(c.window);
    m.dataset.percent = String(Math.round(pct * 10) / 10);
    m.dataset.level = pct > 100 ? "over" : pct >= 80 ? "high" : "ok";
    const text = m.querySelector(".ctx-text");
    if (text) {
      const parts = [span("ctx-tokens", shortTokens(c.tokens))];
      if (c.window > 0) {
        parts.push(" ", span("ctx-window", `/ ${shortTokens(c.window)}`), " ", span("ctx-sep", "·"), " ", span("pct", `${Math.floor(pct)}%`));
        parts[4].setAttribute("aria-hidden", "true");
      } else {
        parts.push(" ", span("ctx-window", "tokens"));
      }
      text.replaceChildren(...parts);
    }
    m.title = c.window > 0
      ? `Context: ${c.tokens.toLocaleString("en-US")} of ${c.window.toLocaleString("en-US")} tokens (${m.dataset.percent}%) in the next request; history is compacted at 80%`
      : `Context: ${c.tokens.toLocaleString("en-US")} tokens in the next request (context window unknown)`;
    this.updateMeter();
  }

  updateMeter() {
    const m = this.meter;
    if (!m) return;
    const pct = Number(m.dataset.percent) || 0;
    m.style.setProperty("--pct", String(Math.min(100, Math.max(0, pct))));
  }
}

/** A readable message for a failed /compact. */
function compactError(err) {
  switch (err?.code) {
    case "busy":
      return "The agent is busy — try /compact when it is idle.";
    case "forbidden":
    case "unauthorized":
      return "You may not compact this session.";
    case "compaction_failed":
      return `Compaction failed: ${err.message || "the summary could not be written"}.`;
  }
  return `Compaction failed: ${err?.message || err?.code || "unknown error"}.`;
}

/** Formats a token count like the server (950, 12.3k, 128k, 1.23M). */
function shortTokens(n) {
  if (n < 1000) return String(n);
  if (n < 1_000_000) return (n / 1000).toFixed(1).replace(/\.0$/, "") + "k";
  return (n / 1_000_000).toFixed(2).replace(/\.00$/, "") + "M";
}

function span(cls, text) {
  const s = document.createElement("span");
  s.className = cls;
  s.textContent = text;
  return s;
}

function button(text, action, label) {
  const b = document.createElement("button");
  b.type = "button";
  b.className = "icon";
  b.dataset.action = action;
  b.title = label;
  b.setAttribute("aria-label", label);
  b.textContent = text;
  return b;
}
