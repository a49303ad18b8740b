// The timeline panel of the chat page (timeline.templ, docs/ui.md): a
// Gantt-style strip with lanes for input (user messages, waits for an
// approval or an answer), the model (each request: time to first token,
// then the stream; retry waits; compactions) and tools, every bar its
// duration from event times; below it the entries with search. The
// session's figures are the page footer's (#session-figures), computed by
// the server (render.SessionFigures), not here. The strip and the entries
// are computed here from the raw events: the
// panel is built the first time it opens (the session's events from the
// panel's data-events route, in pages), then kept current from the events
// the transcript applies. A bar or an entry scrolls the transcript to its
// item, loading older history pages when it is not on the page.

// PAGE is how many events one request reads while building.
const PAGE = 2000;
// REDRAW is the least time between two redraws while events stream (ms).
const REDRAW = 200;
// Chunks that are a model's first token (render's TTFT counts the same).
const DELTAS = new Set(["text-delta", "reasoning-delta", "tool-call-delta"]);
const SAFE_ID = /^[A-Za-z0-9_-]{1,64}$/;
const INPUT_KINDS = new Set(["user", "context", "system"]);
const LANES = [
  ["input", "Input"],
  ["model", "Model"],
  ["tools", "Tools"],
];
const KIND_NAMES = {
  system: "system",
  user: "user",
  context: "context",
  assistant: "assistant",
  tool: "tool",
  retry: "retry",
  compaction: "compaction",
  approval: "approval",
  question: "question",
};

/** TimelineModel folds a session's events into entries: the spans of the
 * strip (lane set) and the list's rows. Pure: no DOM. */
export class TimelineModel {
  constructor() {
    this.applied = -1; // the last seq folded
    this.last = 0; // the latest event time: open spans end there
    this.entries = []; // in the order they opened (seq order)
    this.byKey = new Map();
    this.turns = new Map(); // turn -> {turn, start, end}
    this.turn = 0; // the open turn, 0 between turns
    this.steps = 0;
    this.requests = new Map(); // "turn/step" -> the open model request
    this.attempts = new Map(); // "turn/step" -> requests made
    this.retries = new Map(); // "turn/step" -> the open retry wait
    this.tools = new Map(); // call id -> the open tool entry
    this.waits = new Map(); // approval or question id -> its entry
    this.compactions = new Map(); // compaction id -> its entry
  }

  /** Folds one event; false for one already folded. */
  apply(ev) {
    if (ev.seq <= this.applied) return false;
    this.applied = ev.seq;
    const t = Number(ev.time) || 0;
    if (t > this.last) this.last = t;
    const d = ev.data || {};
    switch (ev.type) {
      case "turn/start":
        this.turn = d.turn;
        this.turns.set(d.turn, { turn: d.turn, start: t, end: null });
        break;
      case "turn/end": {
        const tu = this.turns.get(d.turn);
        if (tu) tu.end = t;
        // Whatever is still open ends with its turn.
        for (const m of [this.requests, this.retries, this.tools, this.waits]) {
          for (const [k, e] of m) {
            if (e.turn !== d.turn) continue;
            this.close(e, t);
            m.delete(k);
          }
        }
        if (d.reason?.kind && d.reason.kind !== "completed") {
          const last = this.lastOf(d.turn, "assistant");
          if (last && last.end === t) last.outcome = d.reason.error?.code || d.reason.kind;
        }
        this.turn = 0;
        break;
      }
      case "step/start":
        this.steps++;
        this.request(ev, d.turn, d.step, t);
        break;
      case "llm/retry-started": {
        const w = this.retries.get(`${d.turn}/${d.step}`);
        if (w) this.close(w, t);
        this.request(ev, d.turn, d.step, t);
        break;
      }
      case "assistant/chunk": {
        const r = this.requests.get(`${d.turn}/${d.step}`);
        if (r && r.first == null && DELTAS.has(d.chunk?.type)) {
          r.first = t;
          r.v++;
        }
        break;
      }
      case "assistant/message": {
        const k = `${d.turn}/${d.step}`;
        const r = this.requests.get(k) || this.request(ev, d.turn, d.step, t);
        this.requests.delete(k);
        r.end = t;
        r.usage = d.usage || null;
        r.outcome = d.interrupted ? "interrupted" : "ok";
        r.text = messageSummary(d.message);
        r.v++;
        break;
      }
      case "llm/retry": {
        const k = `${d.turn}/${d.step}`;
        const r = this.requests.get(k);
        const f = d.failure || {};
        if (r) {
          this.requests.delete(k);
          r.end = t;
          r.outcome = f.code || "failed";
          r.text = `Failed: ${f.code || ""} ${f.message || ""}`.trim();
          r.v++;
        }
        const w = this.add({
          key: `r-${d.turn}-${d.step}-${d.retry}`, kind: "retry", lane: "model", seq: ev.seq, turn: d.turn, start: t, end: null,
          title: `Retry ${d.retry}${d.maxRetries ? ` of ${d.maxRetries}` : ""}`,
          text: `${f.code || "error"}${f.status ? ` (HTTP ${f.status})` : ""}: ${f.message || ""} — waits ${fmtDuration(d.delayMs || 0)}`,
          target: { id: `r-${d.turn}-${d.step}` },
        });
        this.retries.set(k, w);
        break;
      }
      case "tool/call": {
        const e = this.add({
          key: `t-${ev.seq}`, kind: "tool", lane: "tools", seq: ev.seq, turn: d.turn, start: t, end: null,
          title: d.name || "tool", text: argSummary(d.arguments),
          target: { id: SAFE_ID.test(d.callId || "") ? `t-${d.turn}-${d.callId}` : "" },
        });
        this.tools.set(d.callId, e);
        break;
      }
      case "tool/result": {
        const block = (d.message?.content || []).find((b) => b.type === "tool-result");
        const e = block && this.tools.get(block.toolCallId);
        if (!e) break;
        this.tools.delete(block.toolCallId);
        e.end = t;
        e.outcome = d.error?.code || (block.isError ? "error" : "ok");
        const out = firstLine(textOf(block.content));
        if (out) e.text = `${e.text} → ${out}`;
        e.v++;
        break;
      }
      case "approval/asked": {
        const e = this.add({
          key: `a-${d.id}`, kind: "approval", lane: "input", seq: ev.seq, turn: this.turn, start: t, end: null,
          title: `Approval: ${d.toolName || "tool"}`, text: d.reason || "",
          target: { id: SAFE_ID.test(d.id || "") ? `a-${d.id}` : "" },
        });
        this.waits.set(d.id, e);
        break;
      }
      case "question/asked": {
        const qs = (d.questions || []).map((q) => q.question).filter(Boolean);
        const e = this.add({
          key: `q-${d.id}`, kind: "question", lane: "input", seq: ev.seq, turn: this.turn, start: t, end: null,
          title: "Question", text: qs.join(" · "),
          target: { id: SAFE_ID.test(d.id || "") ? `q-${d.id}` : "" },
        });
        this.waits.set(d.id, e);
        break;
      }
      case "approval/decided":
      case "question/answered": {
        const e = this.waits.get(d.id);
        if (!e) break;
        this.waits.delete(d.id);
        e.end = t;
        e.outcome = d.outcome || "answered";
        e.text = `${e.text} → ${d.outcome || "answered"}${d.by?.name ? ` by ${d.by.name}` : ""}`;
        e.v++;
        break;
      }
      case "user/message": {
        const src = d.source || {};
        if (src.compactionId) break; // the compaction's entry stands for it
        if (src.kind === "user") {
          this.add({
            key: `u-${ev.seq}`, kind: "user", lane: "input", seq: ev.seq, turn: this.turn, start: t, end: t,
            title: src.name ? `User: ${src.name}` : "User", text: clip(withImages(textOf(d.content), d.content), 300),
            target: { id: SAFE_ID.test(d.id || "") ? `u-${d.id}` : "" },
          });
        } else {
          this.add({
            key: `x-${ev.seq}`, kind: "context", lane: null, seq: ev.seq, turn: this.turn, start: t, end: t,
            title: src.plugin ? `Context (${src.plugin})` : `Context (${src.kind || "note"})`, text: clip(textOf(d.content), 300),
            target: {},
          });
        }
        break;
      }
      case "request/header": {
        const h = d.header || {};
        const c = h.config || {};
        const tools = (h.tools || []).length;
        this.add({
          key: `s-${ev.seq}`, kind: "system", lane: null, seq: ev.seq, turn: this.turn, start: t, end: t,
          title: `System (${d.reason || "header"})`,
          text: [c.provider && c.model ? `${c.provider} / ${c.model}` : "", c.reasoningEffort ? `effort ${c.reasoningEffort}` : "",
            `${tools} tool${tools === 1 ? "" : "s"}`, h.system ? `prompt: ${clip(h.system, 200)}` : ""].filter(Boolean).join(" · "),
          target: {},
        });
        break;
      }
      case "request/context":
        this.add({
          key: `x-${ev.seq}`, kind: "context", lane: null, seq: ev.seq, turn: this.turn, start: t, end: t,
          title: "Context (route)",
          text: `${d.provider || ""} / ${d.model || ""}${d.contextWindow ? ` · window ${fmtTokens(d.contextWindow)}` : ""}`,
          target: {},
        });
        break;
      case "compaction/start": {
        const e = this.add({
          key: `c-${d.compactionId}`, kind: "compaction", lane: "model", seq: ev.seq, turn: d.turn ?? 0, start: t, end: null,
          title: "Compaction", text: d.sourceCommandId ? "manual" : "automatic", target: {},
        });
        this.compactions.set(d.compactionId, e);
        break;
      }
      case "compaction/summary": {
        const e = this.compactions.get(d.compactionId);
        if (!e) break;
        e.target = { id: `c-${ev.seq}` };
        e.text = `${e.text} · ${fmtTokens(d.shadowedTokenCount || 0)} tokens summarized`;
        e.v++;
        break;
      }
      case "compaction/end": {
        const e = this.compactions.get(d.compactionId);
        if (!e) break;
        this.compactions.delete(d.compactionId);
        e.end = t;
        e.outcome = d.error ? "error" : "ok";
        if (d.error) e.text = `${e.text} · failed: ${d.error}`;
        e.v++;
        break;
      }
      default:
        return true;
    }
    return true;
  }

  /** Opens a model request of step (turn, step) at t. */
  request(ev, turn, step, t) {
    const k = `${turn}/${step}`;
    const n = (this.attempts.get(k) || 0) + 1;
    this.attempts.set(k, n);
    const r = this.add({
      key: `m-${turn}-${step}-${n}`, kind: "assistant", lane: "model", seq: ev.seq, turn, step, start: t, end: null, first: null,
      title: `Model · step ${step}${n > 1 ? ` (attempt ${n})` : ""}`, text: "", usage: null,
      target: { prefix: `b-${turn}-${step}-` },
    });
    this.requests.set(k, r);
    return r;
  }

  add(e) {
    e.v = 1;
    this.byKey.set(e.key, e);
    // A step's input (its messages, header, context) is logged right after
    // its step/start; list it before the request it is sent in.
    const tail = this.entries[this.entries.length - 1];
    if (INPUT_KINDS.has(e.kind) && tail?.kind === "assistant" && tail.end == null && tail.first == null) {
      this.entries.splice(this.entries.length - 1, 0, e);
    } else {
      this.entries.push(e);
    }
    return e;
  }

  close(e, t) {
    if (e.end != null) return;
    e.end = t;
    e.outcome ||= "ended";
    e.v++;
  }

  lastOf(turn, kind) {
    for (let i = this.entries.length - 1; i >= 0; i--) {
      const e = this.entries[i];
      if (e.turn === turn && e.kind === kind) return e;
    }
    return null;
  }

  /** The end of a span as of now (open spans run to the latest event). */
  endOf(e) {
    return e.end ?? Math.max(this.last, e.start);
  }
}

/** The panel: opens, builds, follows and draws. */
export class Timeline {
  /**
   * @param {HTMLElement} chat the #chat element
   * @param {() => any} transcript the page's Transcript (for loading older pages)
   */
  constructor(chat, transcript) {
    this.chat = chat;
    this.transcript = transcript;
    this.panel = chat.querySelector("#timeline-panel");
    this.button = chat.querySelector("#timeline-button");
    this.model = null; // built on first open
    this.buffer = []; // live events that came while fetching
    this.fetching = false;
    this.timer = 0;
    this.drawn = 0;
    this.rows = new Map(); // entry key -> {li, v}
    this.groups = new Map(); // group key -> <ol>
    if (!this.panel || !this.button) return;
    this.strip = this.panel.querySelector("#tl-strip");
    this.list = this.panel.querySelector("#tl-entries");
    this.search = this.panel.querySelector("#tl-search");
    this.count = this.panel.querySelector("#tl-count");
    this.stateEl = this.panel.querySelector("#tl-state");
    chat.addEventListener("click", (e) => this.onClick(e));
    this.search.addEventListener("input", () => this.filter());
    this.panel.addEventListener("keydown", (e) => {
      if (e.key !== "Escape" || e.defaultPrevented) return;
      // Esc never stops the turn from here: it clears the search, then
      // closes the panel.
      e.preventDefault();
      if (e.target === this.search && this.search.value) {
        this.search.value = "";
        this.filter();
      } else {
        this.setOpen(false);
      }
    });
  }

  get open() {
    return this.panel ? !this.panel.hidden : false;
  }

  onClick(e) {
    const a = e.target.closest("[data-timeline-action], [data-tl-key]");
    if (!a || !this.chat.contains(a)) return;
    if (a.dataset.tlKey) {
      this.jump(a.dataset.tlKey);
      return;
    }
    if (a.dataset.timelineAction === "panel") this.setOpen(this.panel.hidden);
    else if (a.dataset.timelineAction === "close") this.setOpen(false);
  }

  setOpen(open) {
    this.panel.hidden = !open;
    this.button.setAttribute("aria-expanded", String(open));
    if (!open) {
      this.button.focus();
      return;
    }
    if (!this.model) {
      this.model = new TimelineModel();
      this.rows.clear();
      this.groups.clear();
      this.list.replaceChildren();
      this.sync();
    }
    this.draw();
    this.search.focus();
  }

  /** A durable event the transcript applied (in seq order; a merged run
   * of deltas carries from). */
  onEvent(ev) {
    if (!this.model) return;
    if (this.fetching) {
      this.buffer.push(ev);
      return;
    }
    if (ev.seq <= this.model.applied) return;
    if ((ev.from ?? ev.seq) > this.model.applied + 1) {
      // Events this panel has not read: read them from the route first.
      this.buffer.push(ev);
      this.sync();
      return;
    }
    this.model.apply(ev);
    this.changed();
  }

  /** Reads the events after the model's last seq from the route, then the
   * live events that came meanwhile. */
  async sync() {
    if (this.fetching) return;
    this.fetching = true;
    const url = this.panel.dataset.events;
    const m = this.model;
    let progressed = false;
    try {
      for (;;) {
        this.state(m.applied < 0 ? "Loading…" : `Loading… ${m.applied + 1} events`);
        const res = await fetch(`${url}?since=${m.applied}&limit=${PAGE}`, {
          credentials: "same-origin",
          headers: { Accept: "application/json" },
        });
        if (!res.ok) throw new Error(await errorText(res));
        const page = await res.json();
        const events = page.events || [];
        for (const ev of events) if (m.apply(ev)) progressed = true;
        if (events.length === 0 || m.applied >= page.head) break;
      }
    } catch (err) {
      this.fetching = false;
      this.fail(`The timeline could not load: ${err.message || err}`);
      return;
    }
    this.fetching = false;
    this.state("");
    const buf = this.buffer;
    this.buffer = [];
    for (const ev of buf) {
      if (ev.seq <= m.applied) continue;
      if ((ev.from ?? ev.seq) > m.applied + 1) {
        if (!progressed) {
          // The route does not have them (yet): say so rather than loop.
          this.fail("The timeline missed events: close it and open it again.");
          return;
        }
        this.buffer = buf.slice(buf.indexOf(ev));
        this.sync();
        return;
      }
      m.apply(ev);
    }
    this.changed(true);
  }

  /** Stops following: the next opening starts again from nothing,
   * rather than asking the route again at every live event. */
  fail(text) {
    this.model = null;
    this.buffer = [];
    this.state(text, true);
  }

  state(text, error = false) {
    this.stateEl.textContent = text;
    this.stateEl.classList.toggle("tl-error", error);
  }

  /** Redraws at most every REDRAW ms while events stream. */
  changed(now = false) {
    if (!this.open || this.timer) return;
    const wait = now ? 0 : Math.max(0, REDRAW - (performance.now() - this.drawn));
    this.timer = setTimeout(() => {
      this.timer = 0;
      requestAnimationFrame(() => this.draw());
    }, wait);
  }

  draw() {
    if (!this.model || !this.open) return;
    this.drawn = performance.now();
    this.drawStrip();
    this.drawEntries();
  }

  // --- the strip ----------------------------------------------------------

  /** Turns (and spans outside any turn) laid end to end, the idle time
   * between them left out, each its real duration wide. */
  segments() {
    const m = this.model;
    const segs = [];
    const byTurn = new Map();
    for (const tu of m.turns.values()) {
      const s = { key: `T${tu.turn}`, turn: tu.turn, start: tu.start, end: tu.end ?? Math.max(m.last, tu.start) };
      segs.push(s);
      byTurn.set(tu.turn, s);
    }
    const seg = new Map();
    for (const e of m.entries) {
      if (!e.lane) continue;
      let s = byTurn.get(e.turn);
      if (!s) {
        s = { key: `E${e.key}`, turn: 0, start: e.start, end: m.endOf(e) };
        segs.push(s);
      }
      seg.set(e, s);
    }
    segs.sort((a, b) => a.start - b.start);
    const total = segs.reduce((n, s) => n + Math.max(1, s.end - s.start), 0);
    // The gaps between turns take a tenth of the width at most.
    const gap = segs.length > 1 ? Math.min(total * 0.02, (total * 0.1) / (segs.length - 1)) : 0;
    let at = 0;
    for (const s of segs) {
      s.offset = at;
      at += Math.max(1, s.end - s.start) + gap;
    }
    const span = Math.max(1, at - gap);
    return { segs, seg, span };
  }

  drawStrip() {
    const m = this.model;
    const { segs, seg, span } = this.segments();
    const pct = (s, t) => ((s.offset + Math.min(Math.max(t - s.start, 0), Math.max(1, s.end - s.start))) / span) * 100;
    const canvas = el("div", "tl-canvas");
    // Wide enough for every turn to be seen; the strip scrolls sideways.
    const width = Math.max(this.strip.clientWidth || 320, segs.length * 48);
    canvas.style.minWidth = `${segs.length * 48}px`;
    // A bar is at least 4 px wide (CSS): what it covers, in percent.
    const minPct = (4 / width) * 100;
    const axis = el("div", "tl-lane tl-axis");
    axis.append(el("span", "tl-lane-name", ""));
    const axisTrack = el("div", "tl-track");
    for (const s of segs) {
      if (!s.turn) continue;
      const mark = el("span", "tl-seg", `T${s.turn}`);
      mark.title = `Turn ${s.turn} · ${fmtDuration(s.end - s.start)}`;
      place(mark, pct(s, s.start), pct(s, s.end));
      axisTrack.append(mark);
    }
    axis.append(axisTrack);
    canvas.append(axis);
    for (const [lane, name] of LANES) {
      const row = el("div", "tl-lane");
      row.dataset.lane = lane;
      row.append(el("span", "tl-lane-name", name));
      const track = el("div", "tl-track");
      const ends = []; // per row: where its last bar ends (percent)
      for (const e of m.entries) {
        if (e.lane !== lane) continue;
        const s = seg.get(e);
        const x0 = pct(s, e.start);
        const x1 = pct(s, m.endOf(e));
        // Overlapping spans (tools running together) take rows below.
        let r = ends.findIndex((end) => end <= x0);
        if (r < 0) {
          r = ends.length;
          ends.push(0);
        }
        ends[r] = Math.max(x1, x0 + minPct);
        track.append(this.bar(e, x0, x1, r));
      }
      track.style.setProperty("--rows", String(Math.max(1, ends.length)));
      row.append(track);
      canvas.append(row);
    }
    let scroller = this.strip.querySelector(".tl-scroll");
    // The newest turns are in view at first, and stay so while the reader
    // has not scrolled back.
    const follow = !scroller || scroller.scrollLeft + scroller.clientWidth >= scroller.scrollWidth - 2;
    const left = scroller?.scrollLeft ?? 0;
    if (!scroller) {
      scroller = el("div", "tl-scroll");
      this.strip.replaceChildren(scroller);
    }
    scroller.replaceChildren(canvas);
    scroller.scrollLeft = follow ? scroller.scrollWidth : left;
  }

  bar(e, x0, x1, row) {
    const m = this.model;
    const end = m.endOf(e);
    const dur = end - e.start;
    const b = el("button", "tl-bar");
    b.type = "button";
    b.tabIndex = -1; // the entries below are the keyboard's way in
    b.dataset.tlKey = e.key;
    b.dataset.kind = e.kind;
    b.dataset.start = String(e.start);
    b.dataset.end = String(end);
    b.dataset.dur = String(dur);
    if (e.end == null) b.dataset.open = "1";
    if (e.outcome && e.outcome !== "ok") b.dataset.outcome = e.outcome;
    place(b, x0, x1);
    b.style.setProperty("--row", String(row));
    let label = `${e.title}: ${fmtDuration(dur)}`;
    if (e.kind === "assistant" && e.first != null) {
      const ttft = e.first - e.start;
      label += ` (time to first token ${fmtDuration(ttft)}, stream ${fmtDuration(end - e.first)})`;
      const w = el("span", "tl-ttft");
      w.style.width = `${dur > 0 ? Math.min(100, (ttft / dur) * 100) : 0}%`;
      b.append(w);
      b.dataset.ttft = String(ttft);
    }
    b.setAttribute("aria-label", label);
    b.title = e.text ? `${label}\n${clip(e.text, 300)}` : label;
    return b;
  }

  // --- the entries ----------------------------------------------------------

  drawEntries() {
    const m = this.model;
    // Newest at the bottom: the list starts there and follows it while the
    // reader stays there.
    const list = this.list;
    const follow = this.rows.size === 0 || list.scrollTop + list.clientHeight >= list.scrollHeight - 4;
    let group = null;
    let groupKey = "";
    for (let i = 0; i < m.entries.length; i++) {
      const e = m.entries[i];
      // A turn's entries under its heading; a run of entries between
      // turns (a manual compaction, a seed) under one of its own.
      const key = e.turn ? `T${e.turn}` : groupKey.startsWith("S") ? groupKey : `S${e.key}`;
      if (key !== groupKey || !group) {
        groupKey = key;
        group = this.groups.get(key);
        if (!group) {
          const sec = el("section", "tl-group");
          sec.dataset.turn = String(e.turn || 0);
          const h = el("h3", "tl-group-title", e.turn ? `Turn ${e.turn}` : "Outside turns");
          if (e.turn) h.append(" ", el("span", "tl-group-dur muted", ""));
          group = el("ol", "tl-list");
          sec.append(h, group);
          this.list.append(sec);
          this.groups.set(key, group);
        }
      }
      const row = this.rows.get(e.key);
      if (!row) {
        const li = el("li", "tl-row");
        li.append(this.entryButton(e));
        // An input listed before its step's request that is drawn already.
        const next = this.rows.get(m.entries[i + 1]?.key);
        if (next && next.li.parentElement === group) group.insertBefore(li, next.li);
        else group.append(li);
        this.rows.set(e.key, { li, v: e.v, open: e.end == null });
        this.match(li);
      } else if (row.v !== e.v || row.open) {
        row.li.replaceChildren(this.entryButton(e));
        row.v = e.v;
        row.open = e.end == null;
        this.match(row.li);
      }
    }
    for (const [key, ol] of this.groups) {
      if (!key.startsWith("T")) continue;
      const tu = m.turns.get(Number(key.slice(1)));
      const dur = ol.parentElement.querySelector(".tl-group-dur");
      if (tu && dur) dur.textContent = `${fmtDuration((tu.end ?? m.last) - tu.start)}${tu.end == null ? " · running" : ""}`;
    }
    this.counts();
    if (follow) list.scrollTop = list.scrollHeight;
  }

  entryButton(e) {
    const m = this.model;
    const b = el("button", "tl-entry");
    b.type = "button";
    b.dataset.tlKey = e.key;
    b.dataset.kind = e.kind;
    b.dataset.seq = String(e.seq);
    const head = el("span", "tl-entry-head");
    head.append(el("span", `tl-kind tl-kind-${e.kind}`, KIND_NAMES[e.kind] || e.kind), el("span", "tl-entry-title", e.title));
    if (e.lane && e.end !== e.start) {
      const dur = m.endOf(e) - e.start;
      let text = fmtDuration(dur);
      if (e.kind === "assistant" && e.first != null) text += ` · TTFT ${fmtDuration(e.first - e.start)}`;
      if (e.end == null) text += " · running";
      head.append(el("span", "tl-entry-dur", text));
    }
    b.append(head);
    if (e.text) b.append(el("span", "tl-entry-text", clip(e.text, 240)));
    b.dataset.search = `${e.kind} ${e.title} ${e.text}`.toLowerCase();
    return b;
  }

  filter() {
    for (const { li } of this.rows.values()) this.match(li);
    this.counts();
  }

  match(li) {
    const q = this.search.value.trim().toLowerCase();
    const hay = li.firstElementChild?.dataset.search ?? "";
    li.hidden = q !== "" && !q.split(/\s+/).every((w) => hay.includes(w));
  }

  counts() {
    let shown = 0;
    for (const { li } of this.rows.values()) if (!li.hidden) shown++;
    for (const ol of this.groups.values()) ol.parentElement.hidden = ![...ol.children].some((li) => !li.hidden);
    const total = this.rows.size;
    this.count.textContent = this.search.value.trim() ? `${shown} of ${total}` : `${total} entries`;
  }

  // --- jumping to the transcript ----------------------------------------------

  /** Scrolls the transcript to the item of an entry, loading older pages
   * while it is older than the page holds. */
  async jump(key) {
    const e = this.model?.byKey.get(key);
    if (!e) return;
    const tr = this.transcript();
    const top = this.chat.querySelector("#history-top");
    let item = this.itemOf(e);
    for (let i = 0; !item && tr && top && i < 200; i++) {
      if (top.dataset.more !== "1" || Number(top.dataset.before) <= e.seq) break;
      if (tr.loading) await new Promise((r) => setTimeout(r, 50));
      else await tr.loadOlder();
      item = this.itemOf(e);
    }
    item ||= this.nearest(e.seq);
    for (const b of this.list.querySelectorAll(".tl-entry[aria-current]")) b.removeAttribute("aria-current");
    this.list.querySelector(`.tl-entry[data-tl-key="${CSS.escape(key)}"]`)?.setAttribute("aria-current", "true");
    if (!item) {
      this.state("That entry is not in the transcript.");
      return;
    }
    item.scrollIntoView({ block: "center" });
    item.classList.remove("tl-flash");
    void item.offsetWidth; // restart the highlight
    item.classList.add("tl-flash");
    setTimeout(() => item.classList.remove("tl-flash"), 1600);
  }

  itemOf(e) {
    const tr = this.chat.querySelector("#transcript");
    if (e.target.id) {
      const found = document.getElementById(e.target.id);
      if (found && tr.contains(found)) return found;
    }
    if (e.target.prefix) {
      const found = tr.querySelector(`:scope > [id^="${CSS.escape(e.target.prefix)}"]`);
      if (found) return found;
    }
    return e.lane ? tr.querySelector(`:scope > [data-seq="${e.seq}"]`) : null;
  }

  /** The first item at or after seq (an entry without an item of its own:
   * system, context). */
  nearest(seq) {
    const tr = this.chat.querySelector("#transcript");
    for (const c of tr.children) if (Number(c.dataset.seq) >= seq) return c;
    return null;
  }
}

// --- helpers ---------------------------------------------------------------

function el(tag, cls, text) {
  const n = document.createElement(tag);
  if (cls) n.className = cls;
  if (text !== undefined) n.textContent = text;
  return n;
}

function place(n, x0, x1) {
  n.style.left = `${x0}%`;
  n.style.width = `${Math.max(0, x1 - x0)}%`;
}

async function errorText(res) {
  try {
    const body = await res.json();
    if (body.error?.message) return body.error.message;
  } catch {
    /* not JSON */
  }
  return `HTTP ${res.status}`;
}

function textOf(blocks) {
  if (typeof blocks === "string") return blocks;
  return (blocks || []).filter((b) => b.type === "text" && b.text).map((b) => b.text).join("\n");
}

/** Text followed by the images' count ("look [2 images]"). */
function withImages(text, blocks) {
  const n = (blocks || []).filter((b) => b.type === "image").length;
  if (!n) return text;
  const note = n === 1 ? "[1 image]" : `[${n} images]`;
  return text ? `${text} ${note}` : note;
}

function messageSummary(msg) {
  const blocks = msg?.content || [];
  const text = textOf(blocks).trim();
  const calls = blocks.filter((b) => b.type === "tool-call").map((b) => b.name);
  const parts = [];
  if (text) parts.push(clip(text, 240));
  if (calls.length) parts.push(`→ ${calls.join(", ")}`);
  if (!parts.length && blocks.some((b) => b.type === "reasoning")) parts.push("(reasoning only)");
  return parts.join(" ");
}

/** The part of a call's arguments people recognise it by. */
function argSummary(args) {
  if (!args) return "";
  try {
    const a = JSON.parse(args);
    for (const f of ["command", "file_path", "pattern", "path", "url"]) if (typeof a[f] === "string" && a[f]) return clip(a[f], 200);
  } catch {
    /* not JSON: show it raw */
  }
  return clip(args, 200);
}

function firstLine(s) {
  const line = (s || "").split("\n").find((l) => l.trim()) || "";
  return clip(line.trim(), 160);
}

function clip(s, n) {
  s = String(s ?? "");
  return s.length > n ? `${s.slice(0, n - 1)}…` : s;
}

/** Formats like the usage row (render.duration): 820 ms, 12.4 s, 3m 05s. */
export function fmtDuration(ms) {
  ms = Math.round(ms);
  if (ms < 0) return "0 ms";
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)}m ${String(Math.floor((ms % 60_000) / 1000)).padStart(2, "0")}s`;
}

/** Formats like the usage row (render.tokens): 950, 1.2k, 3.40M. */
export function fmtTokens(n) {
  if (n < 1000) return String(n);
  if (n < 1_000_000) return `${(n / 1000).toFixed(1)}k`;
  return `${(n / 1_000_000).toFixed(2)}M`;
}

