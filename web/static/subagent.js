// Subagents' transcripts, nested in their parents' task cards (docs/ui.md
// "Subagents"). A task card carries its child session's id
// (.subagent-transcript[data-child]); the child's transcript is the
// child's own log, followed on this tab's socket like any session and
// rendered by the server's projection of the child. Its items' ids are
// prefixed here (sa-<child>-) so they can never meet the parent's, and
// its operations only ever touch the card's container: the child's dock,
// prompts and header fragments are not shown.

import { decorate } from "./util.js";

export class Subagents {
  /**
   * @param {HTMLElement} chat the #chat element
   * @param {import("./socket.js").Socket} socket
   */
  constructor(chat, socket) {
    this.chat = chat;
    this.socket = socket;
    this.share = !!chat.dataset.share;
    this.nested = new Map(); // child id -> Nested
    // toggle does not bubble: listen in the capture phase.
    chat.addEventListener("toggle", (e) => {
      const card = e.target;
      if (card instanceof HTMLDetailsElement && card.classList.contains("subagent") && card.open) this.attach(card);
    }, true);
    const transcript = chat.querySelector("#transcript");
    if (transcript) {
      // Cards come and go with the parent's fragments (a running card is
      // replaced by the finished one) and history pages.
      new MutationObserver(() => this.scan()).observe(transcript, { childList: true, subtree: true });
    }
    this.scan();
  }

  scan() {
    for (const card of this.chat.querySelectorAll("details.subagent")) {
      if (this.share) card.querySelector(".subagent-link")?.remove();
      const box = card.querySelector(".subagent-transcript[data-child]");
      if (!box) continue;
      const n = this.nested.get(box.dataset.child);
      if (n) {
        n.adopt(box);
        continue;
      }
      // A running child is followed at once; a finished one when its
      // card is opened.
      if (card.open || card.closest(".item.tool")?.dataset.status === "running") this.attach(card);
    }
  }

  attach(card) {
    const box = card.querySelector(".subagent-transcript[data-child]");
    if (!box) return;
    const id = box.dataset.child;
    const have = this.nested.get(id);
    if (have) {
      have.adopt(box);
      return;
    }
    const n = new Nested(id, box);
    this.nested.set(id, n);
    this.socket.follow(id, {
      since: () => n.applied,
      onPush: (msg) => {
        if (msg.ch === "session/closed" && msg.reason === "unloaded") this.socket.resubscribe(id);
        else n.push(msg);
      },
      onFail: (err) => n.fail(err),
    });
  }
}

/** One child's transcript inside its card's container. */
class Nested {
  constructor(id, box) {
    this.id = id;
    this.box = box;
    this.prefix = `sa-${id}-`;
    this.applied = -1;
    this.streams = new Map(); // prefixed block id -> {target, pending: string[]}
    this.scheduled = false;
    box.dataset.state = "loading";
  }

  /** The card was rendered again: its new container takes the items. */
  adopt(box) {
    if (box === this.box) return;
    box.replaceChildren(...this.box.childNodes);
    for (const [k, v] of Object.entries(this.box.dataset)) box.dataset[k] = v;
    this.box = box;
  }

  fail(err) {
    this.box.dataset.state = "failed";
    const p = document.createElement("p");
    p.className = "muted subagent-unavailable";
    p.textContent = err.code === "not_found" || err.code === "unauthorized"
      ? "The subagent's transcript is not available here."
      : `The subagent's transcript could not be loaded: ${err.message || err.code}.`;
    this.box.replaceChildren(p);
  }

  push(msg) {
    switch (msg.ch) {
      case "session/event":
        this.events([msg.event], msg.html);
        break;
      case "session/events":
        this.events(msg.events, msg.html);
        break;
      case "replay/done":
        this.box.dataset.state = "synced";
        break;
      case "agent/status":
        this.box.dataset.status = msg.status;
        break;
    }
  }

  /** Applies events in seq order and their fragment; <template
   * data-op="at" data-seq="N"> marks where event N's fragment starts. */
  events(evs, html) {
    const fresh = [];
    let next = this.applied + 1;
    for (const ev of evs || []) {
      if (!ev || ev.seq < next) continue;
      fresh.push(ev);
      next = ev.seq + 1;
    }
    if (fresh.length === 0) return;
    this.applied = next - 1;
    let i = 0;
    const upTo = (seq) => {
      while (i < fresh.length && fresh[i].seq <= seq) {
        const ev = fresh[i++];
        if (ev.type === "assistant/chunk") this.delta(ev.data);
      }
    };
    if (html) this.apply(html, upTo);
    upTo(Infinity);
  }

  find(id) {
    return id ? this.box.querySelector(`#${CSS.escape(this.prefix + id)}`) : null;
  }

  /** Gives el and every element in it the child's id prefix. */
  own(el) {
    if (el.id) el.id = this.prefix + el.id;
    for (const d of el.querySelectorAll("[id]")) d.id = this.prefix + d.id;
    return el;
  }

  apply(html, at) {
    const t = document.createElement("template");
    t.innerHTML = html;
    for (const tpl of t.content.children) {
      if (tpl.tagName !== "TEMPLATE") continue;
      const d = tpl.dataset;
      switch (d.op) {
        case "at":
          at(Number(d.seq));
          break;
        case "upsert":
          if (d.parent && d.parent !== "transcript") break; // dock, prompts, header: the parent's page
          for (const el of [...tpl.content.children]) {
            const old = el.id ? this.find(el.id) : null;
            this.own(el);
            if (old) old.replaceWith(el);
            else this.box.append(el);
            decorate(el);
          }
          break;
        case "replace-prefix": {
          const p = this.prefix + d.prefix;
          const found = [...this.box.children].filter((c) => c.id.startsWith(p));
          const items = [...tpl.content.children].map((el) => this.own(el));
          if (found.length > 0) {
            found[0].before(...items);
            for (const f of found) f.remove();
          } else this.box.append(...items);
          for (const it of items) decorate(it);
          break;
        }
        case "fill": {
          const target = this.find(d.target);
          if (!target) break;
          for (const el of tpl.content.querySelectorAll("[id]")) el.id = this.prefix + el.id;
          target.replaceChildren(tpl.content);
          decorate(target);
          break;
        }
        case "remove":
          this.find(d.target)?.remove();
          break;
        case "append-text":
          this.find(d.target)?.append(tpl.content.textContent);
          break;
        case "preview": {
          const block = this.find(d.target);
          if (!block) break;
          this.streams.delete(this.prefix + d.target);
          block.querySelector(".md-body")?.replaceChildren(tpl.content);
          const tail = block.querySelector(".md-tail");
          if (tail) tail.textContent = "";
          decorate(block);
          break;
        }
      }
    }
  }

  /** Queues a text or reasoning delta; written once per frame. */
  delta(data) {
    const c = data.chunk;
    if (!c || (c.type !== "text-delta" && c.type !== "reasoning-delta") || !c.text) return;
    const id = `${this.prefix}b-${data.turn}-${data.step}-${c.index}`;
    let s = this.streams.get(id);
    if (!s || !s.target.isConnected) {
      const target = this.box.querySelector(`#${CSS.escape(id)} [data-stream]`);
      if (!target) return;
      s = { target, pending: [] };
      this.streams.set(id, s);
    }
    s.pending.push(c.text);
    if (!this.scheduled) {
      this.scheduled = true;
      requestAnimationFrame(() => this.flush());
    }
  }

  flush() {
    this.scheduled = false;
    for (const [id, s] of this.streams) {
      if (!s.target.isConnected) {
        this.streams.delete(id);
        continue;
      }
      if (s.pending.length === 0) continue;
      s.target.append(s.pending.join(""));
      s.pending.length = 0;
    }
  }
}
