// The chat page's controls: the composer (send, queue while running,
// steer, stop), the queue dock, approval and question panels that take
// over the composer, status, mode and model, and the context meter.

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
    this.meter = chat.querySelector("#ctx-meter");
    this.setStatus(this.status?.dataset.status || "idle");
    this.updateMeter();
    if (this.canWrite && this.form) this.bind();
  }

  bind() {
    this.form.addEventListener("submit", (e) => {
      e.preventDefault();
      this.send("followup");
    });
    this.input.addEventListener("keydown", (e) => {
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
    this.input.focus();
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
    if (!content.trim()) return;
    this.input.value = "";
    this.autosize();
    try {
      await this.call(mode, { content });
    } catch {
      // Keep what was typed when the server refused it.
      if (!this.input.value) this.input.value = content;
    }
  }

  stop() {
    this.call("cancel", { keepInbox: true }).catch(() => {});
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
    }
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
        ? "The agent is working — Enter queues, Ctrl+Enter steers now"
        : "Message the agent — Enter sends, Shift+Enter adds a line";
    }
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

  /** Updates the context meter from events (usage and window). */
  onEvent(ev) {
    if (!this.meter) return;
    if (ev.type === "request/context" && ev.data.contextWindow > 0) {
      this.meter.dataset.window = String(ev.data.contextWindow);
    } else if (ev.type === "assistant/message" && ev.data.usage) {
      const u = ev.data.usage;
      this.meter.dataset.used = String((u.inputTokens || 0) + (u.cacheReadTokens || 0) + (u.cacheWriteTokens || 0) + (u.outputTokens || 0));
    } else {
      return;
    }
    this.updateMeter();
  }

  updateMeter() {
    if (!this.meter) return;
    const used = Number(this.meter.dataset.used);
    const win = Number(this.meter.dataset.window);
    const pct = win > 0 ? Math.min(100, Math.floor((used * 100) / win)) : 0;
    this.meter.querySelector(".pct").textContent = `${pct}%`;
    this.meter.style.setProperty("--pct", String(pct));
    this.meter.title = `Context: ${used.toLocaleString()} of ${win.toLocaleString()} tokens`;
  }
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
