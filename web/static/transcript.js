// The live transcript: applies server-rendered fragments (docs/ui.md),
// streams text deltas into their blocks, deduplicates by seq, loads older
// history pages on scroll and keeps the DOM bounded.

import { decorate } from "./util.js";

// At most this many items stay in the DOM; beyond it the far end is
// dropped (older pages load again on scroll; the newest end comes back
// with "jump to the latest").
const MAX_ITEMS = 600;
// Frame budget for applying queued pushes (ms).
const BUDGET = 8;

export class Transcript {
  /**
   * @param {HTMLElement} chat the #chat element
   * @param {{onEvent?: (ev: any) => void}} hooks
   */
  constructor(chat, hooks = {}) {
    this.chat = chat;
    this.el = chat.querySelector("#transcript");
    this.scroller = chat.querySelector("#scroller");
    this.top = chat.querySelector("#history-top");
    this.dock = chat.querySelector("#dock");
    this.takeover = chat.querySelector("#takeover");
    this.jump = chat.querySelector("#jump-latest");
    this.hooks = hooks;
    this.applied = Number(chat.dataset.head);
    this.queue = [];
    this.scheduled = false;
    this.detached = false; // the newest items were dropped
    this.loading = false;
    this.streams = new Map(); // block id -> {node: Text, peek?: Element}
    this.followBottom = true;
    this.scroller.addEventListener("scroll", () => this.onScroll(), { passive: true });
    this.scrollToBottom();
    this.observeTop();
  }

  since() {
    return this.applied;
  }

  /** Queues a session/event push; pushes are applied once per frame. */
  push(msg) {
    this.queue.push(msg);
    if (!this.scheduled) {
      this.scheduled = true;
      requestAnimationFrame(() => this.flush());
    }
  }

  flush() {
    this.scheduled = false;
    const atBottom = this.followBottom;
    const start = performance.now();
    let n = 0;
    while (n < this.queue.length) {
      this.applyPush(this.queue[n++]);
      if ((n & 63) === 0 && performance.now() - start > BUDGET) break;
    }
    this.queue.splice(0, n);
    this.finishStreams();
    if (atBottom) {
      this.trimTop();
      this.scrollToBottom();
    }
    if (this.queue.length > 0) {
      this.scheduled = true;
      requestAnimationFrame(() => this.flush());
    }
  }

  applyPush(msg) {
    if (msg.events) {
      this.applyBatch(msg);
      return;
    }
    const ev = msg.event;
    if (!ev || ev.seq <= this.applied) return; // a duplicate
    if (ev.seq !== this.applied + 1) {
      // A gap cannot happen with a healthy server; repair by resuming.
      this.hooks.onGap?.();
      return;
    }
    this.applied = ev.seq;
    if (ev.type === "assistant/chunk") this.delta(ev.data);
    if (msg.html) this.applyHTML(msg.html);
    this.hooks.onEvent?.(ev);
  }

  /** Applies a session/events push: its events in seq order (a merged run
   * of deltas has "from", its first seq) and their fragments, joined in
   * one html where <template data-op="at" data-seq="N"> marks where event
   * N's fragment starts: the events up to N are applied first, as they
   * would be one push at a time. */
  applyBatch(msg) {
    const fresh = [];
    let next = this.applied + 1;
    for (const ev of msg.events) {
      if (ev.seq < next) continue; // a duplicate
      if ((ev.from ?? ev.seq) !== next) {
        this.hooks.onGap?.();
        return;
      }
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
        this.hooks.onEvent?.(ev);
      }
    };
    if (msg.html) this.applyHTML(msg.html, upTo);
    upTo(Infinity);
  }

  /** Queues a text or reasoning delta for its streaming block; the text
   * reaches the DOM once per frame (finishStreams). */
  delta(d) {
    const c = d.chunk;
    if (!c || (c.type !== "text-delta" && c.type !== "reasoning-delta") || !c.text) return;
    const id = `b-${d.turn}-${d.step}-${c.index}`;
    let s = this.streams.get(id);
    if (!s || !s.target.isConnected) {
      const block = document.getElementById(id);
      const target = block?.querySelector("[data-stream]");
      if (!target) return;
      s = { target, peek: block.querySelector("[data-peek]"), pending: [], line: "" };
      this.streams.set(id, s);
    }
    s.pending.push(c.text);
  }

  /** Writes the queued deltas: one new text node per block and frame, so
   * a long stream never copies its whole text again. */
  finishStreams() {
    for (const [id, s] of this.streams) {
      if (!s.target.isConnected) {
        this.streams.delete(id);
        continue;
      }
      if (s.pending.length === 0) continue;
      const text = s.pending.join("");
      s.pending.length = 0;
      s.target.append(text);
      if (s.peek) {
        const nl = text.lastIndexOf("\n");
        s.line = nl >= 0 ? text.slice(nl + 1) : s.line + text;
        if (s.line.length > 400) s.line = s.line.slice(-200);
        s.peek.textContent = (s.line.trim() || s.peek.textContent).slice(-200);
      }
    }
  }

  /** On a share-link page, points the images of live fragments (linked
   * as signed-in people reach them) at the link's own route, before they
   * are inserted and load. */
  shareImages(root) {
    const base = `/s/${encodeURIComponent(this.chat.dataset.share)}/attachments/`;
    for (const tpl of root.querySelectorAll("template")) {
      for (const a of tpl.content.querySelectorAll("a[data-attachment]")) {
        const url = base + encodeURIComponent(a.dataset.attachment);
        a.href = url;
        const img = a.querySelector("img");
        if (img) img.src = url;
      }
    }
  }

  /** Applies a fragment: a list of <template data-op> operations; at(seq)
   * is called at each "at" marker of a session/events push. */
  applyHTML(html, at) {
    const box = document.createElement("template");
    box.innerHTML = html;
    if (this.chat.dataset.share) this.shareImages(box.content);
    for (const tpl of box.content.children) {
      if (tpl.tagName !== "TEMPLATE") continue;
      const op = tpl.dataset.op;
      const content = tpl.content;
      switch (op) {
        case "at":
          at?.(Number(tpl.dataset.seq));
          break;
        case "upsert":
          this.upsert(content, tpl.dataset.parent);
          break;
        case "replace-prefix":
          this.replacePrefix(tpl.dataset.prefix, content);
          break;
        case "fill": {
          const target = document.getElementById(tpl.dataset.target);
          if (target) {
            target.replaceChildren(content);
            decorate(target);
          }
          break;
        }
        case "remove":
          document.getElementById(tpl.dataset.target)?.remove();
          break;
        case "append-text": {
          const target = document.getElementById(tpl.dataset.target);
          if (target) target.append(content.textContent);
          break;
        }
        case "preview": {
          const block = document.getElementById(tpl.dataset.target);
          if (!block) break;
          // The preview covers every delta up to its seq, queued ones too.
          const s = this.streams.get(tpl.dataset.target);
          if (s) s.pending.length = 0;
          const body = block.querySelector(".md-body");
          const tail = block.querySelector(".md-tail");
          if (body) body.replaceChildren(content);
          if (tail) tail.textContent = "";
          this.streams.delete(tpl.dataset.target);
          decorate(block);
          break;
        }
      }
    }
  }

  parentOf(name) {
    if (!name || name === "transcript") return this.el;
    if (name === "dock") return this.dock;
    if (name === "takeover") return this.takeover;
    return document.getElementById(name);
  }

  upsert(content, parentName) {
    const parent = this.parentOf(parentName);
    for (const el of [...content.children]) {
      const old = el.id ? document.getElementById(el.id) : null;
      if (old) {
        keepMinSeq(old, el);
        old.replaceWith(el);
      } else if (parent && !(this.detached && parent === this.el)) {
        parent.append(el);
      } else {
        continue;
      }
      decorate(el);
    }
  }

  replacePrefix(prefix, content) {
    const found = [...this.el.children].filter((c) => c.id.startsWith(prefix));
    const items = [...content.children];
    if (found.length > 0) {
      found[0].before(...items);
      for (const f of found) f.remove();
    } else if (!this.detached) {
      this.el.append(...items);
    }
    for (const it of items) decorate(it);
  }

  // --- scrolling, paging, bounded DOM ---------------------------------

  onScroll() {
    const s = this.scroller;
    this.followBottom = s.scrollHeight - s.scrollTop - s.clientHeight < 80;
  }

  scrollToBottom() {
    this.scroller.scrollTop = this.scroller.scrollHeight;
  }

  observeTop() {
    if (!this.top) return;
    const io = new IntersectionObserver((entries) => {
      if (entries.some((e) => e.isIntersecting)) this.loadOlder();
    }, { root: this.scroller, rootMargin: "400px 0px 0px 0px" });
    io.observe(this.top);
    this.top.addEventListener("click", (e) => {
      if (e.target.closest("[data-action=load-older]")) this.loadOlder();
    });
  }

  /** Fetches the page before the oldest item shown and prepends it. */
  async loadOlder() {
    if (this.loading || this.top.dataset.more !== "1") return;
    const url = this.chat.dataset.history;
    if (!url) return;
    this.loading = true;
    try {
      const res = await fetch(`${url}?before=${encodeURIComponent(this.top.dataset.before)}`, { credentials: "same-origin" });
      if (!res.ok) throw new Error(`history: HTTP ${res.status}`);
      const box = document.createElement("template");
      box.innerHTML = await res.text();
      const page = box.content.querySelector(".history-page");
      if (!page) return;
      // Keep what the reader looks at in place: anchor on the first item.
      const s = this.scroller;
      const anchor = this.el.firstElementChild;
      const anchorTop = anchor ? anchor.getBoundingClientRect().top : 0;
      const items = [...page.children].filter((el) => !el.id || !document.getElementById(el.id));
      this.el.prepend(...items);
      for (const it of items) decorate(it);
      this.top.dataset.before = page.dataset.before;
      this.top.dataset.more = page.dataset.more;
      if (page.dataset.more !== "1") this.top.replaceChildren();
      this.trimBottom();
      if (anchor) s.scrollTop += anchor.getBoundingClientRect().top - anchorTop;
      delete this.top.dataset.error;
    } catch (err) {
      this.top.dataset.error = String(err.message || err);
      return;
    } finally {
      this.loading = false;
    }
    // Still at the top (a short page): go on, the observer will not fire
    // again while the marker stays in view.
    requestAnimationFrame(() => {
      if (this.scroller.scrollTop < 400) this.loadOlder();
    });
  }

  /** Drops the oldest items when the page grows past the bound. */
  trimTop() {
    const extra = this.el.children.length - MAX_ITEMS;
    if (extra <= 0) return;
    for (let i = 0; i < extra; i++) this.el.firstElementChild.remove();
    let min = Infinity;
    for (const c of this.el.children) min = Math.min(min, Number(c.dataset.seq) || Infinity);
    if (min !== Infinity) {
      this.top.dataset.before = String(min);
      this.top.dataset.more = "1";
      if (!this.top.querySelector("[data-action=load-older]")) {
        const b = document.createElement("button");
        b.type = "button";
        b.className = "quiet small";
        b.dataset.action = "load-older";
        b.textContent = "Load older messages";
        this.top.replaceChildren(b);
      }
    }
  }

  /** Drops the newest items after older pages came in past the bound. */
  trimBottom() {
    const extra = this.el.children.length - MAX_ITEMS;
    if (extra <= 0) return;
    for (let i = 0; i < extra; i++) this.el.lastElementChild.remove();
    this.detached = true;
    if (this.jump) this.jump.hidden = false;
  }
}

function keepMinSeq(old, el) {
  const o = Number(old.dataset.seq);
  const n = Number(el.dataset.seq);
  if (o < n) el.dataset.seq = String(o);
}
