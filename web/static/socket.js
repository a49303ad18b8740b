// One WebSocket per tab, multiplexed by session (docs/protocol.md). It
// reconnects silently with jittered exponential backoff and resubscribes
// every followed session with since = the last seq that session applied.

const MIN_DELAY = 500;
const MAX_DELAY = 10_000;
// CLOSE_REVOKED: the socket's credential died (logged out, password
// changed, link revoked); reconnecting with it cannot succeed.
const CLOSE_REVOKED = 4401;
// A message whose answer was lost is sent again (same id) for this long.
const SEND_RETRY_FOR = 120_000;

/** How long to wait before sending an unavailable request again: the
 * server's retryAfter (seconds; a session moving between replicas) when it
 * says one, else a jittered backoff from 125 ms up to 5 s. */
export function retryDelay(err, attempt) {
  const base = Math.min(5_000, 250 * 2 ** attempt);
  const backoff = base / 2 + Math.random() * base / 2;
  const after = Number(err && err.retryAfter) * 1000;
  return after > 0 ? Math.max(after, backoff) : backoff;
}

export class Socket {
  /** @param {string} url */
  constructor(url) {
    this.url = url;
    this.ws = null;
    // Request ids are unique across tabs and reloads: a followup's or
    // steer's id is its idempotency key (docs/protocol.md).
    const bytes = crypto.getRandomValues(new Uint8Array(8));
    this.prefix = "c" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
    this.nextId = 1;
    this.pending = new Map(); // request id -> {resolve, reject}
    this.opened = []; // callbacks waiting for the next open (whenOpen)
    this.handlers = new Map(); // channel -> Set<fn>
    this.subs = new Map(); // session -> {since(): number, onPush(msg), onFail(err), onSubscribed?(answer)}
    this.attempt = 0;
    this.timer = 0;
    this.open = false;
    this.stopped = false;
    this.connections = 0; // opened so far (diagnostics, tests)
    this.onState = () => {};
  }

  start() {
    this.connect();
    // A tab that wakes up or comes back online reconnects at once.
    window.addEventListener("online", () => this.kick());
    document.addEventListener("visibilitychange", () => {
      if (document.visibilityState === "visible") this.kick();
    });
  }

  kick() {
    if (!this.open && !this.stopped && this.ws === null) {
      clearTimeout(this.timer);
      this.connect();
    }
  }

  connect() {
    this.timer = 0;
    let ws;
    try {
      ws = new WebSocket(this.url);
    } catch {
      this.retry();
      return;
    }
    this.ws = ws;
    ws.onopen = () => {
      this.open = true;
      this.connections++;
      this.attempt = 0;
      this.onState("open");
      for (const fn of this.opened.splice(0)) fn();
      for (const [session, sub] of this.subs) this.subscribe(session, sub);
    };
    ws.onmessage = (e) => this.receive(e.data);
    ws.onclose = (e) => {
      this.ws = null;
      this.open = false;
      for (const p of this.pending.values()) p.reject({ code: "unavailable", message: "connection lost" });
      this.pending.clear();
      if (this.stopped) return;
      this.onState("closed", e.code);
      if (e.code === CLOSE_REVOKED) {
        // Reload instead: the server then asks to sign in again (or says
        // the share link is gone).
        this.stopped = true;
        window.location.reload();
        return;
      }
      this.retry();
    };
    // Errors are followed by close; the browser reports them itself.
    ws.onerror = () => {};
  }

  retry() {
    if (this.stopped || this.timer) return;
    const base = Math.min(MAX_DELAY, MIN_DELAY * 2 ** this.attempt);
    this.attempt = Math.min(this.attempt + 1, 8);
    const delay = base / 2 + Math.random() * base / 2;
    this.timer = setTimeout(() => this.connect(), delay);
  }

  receive(data) {
    let msg;
    try {
      msg = JSON.parse(data);
    } catch {
      return;
    }
    if (msg.re !== undefined) {
      const p = this.pending.get(msg.re);
      if (!p) return;
      this.pending.delete(msg.re);
      if (msg.ok) p.resolve(msg);
      else p.reject(msg.error || { code: "internal", message: "request failed" });
      return;
    }
    if (msg.session && this.subs.has(msg.session) && msg.ch !== "sessions/changed") {
      this.subs.get(msg.session).onPush(msg);
    }
    const hs = this.handlers.get(msg.ch);
    if (hs) for (const fn of hs) fn(msg);
  }

  /** A request id no other tab or page load uses. */
  newId() {
    return `${this.prefix}-${this.nextId++}`;
  }

  /** Sends a request and resolves with its answer. */
  request(op, fields = {}, id = this.newId()) {
    return new Promise((resolve, reject) => {
      if (!this.open) {
        reject({ code: "unavailable", message: "not connected — retrying" });
        return;
      }
      this.pending.set(id, { resolve, reject });
      this.ws.send(JSON.stringify({ id, op, ...fields }));
    });
  }

  /** Resolves when the socket is open, or after ms at the latest. */
  whenOpen(ms) {
    if (this.open) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, Math.max(ms, 0));
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.opened.push(done);
    });
  }

  /** Sends a message (op followup or steer) under key, its idempotency
   * key. An answer lost with the connection, or a server that could not
   * store it yet (unavailable), gets the same request again with the same
   * key, so the server stores the message once; onRetry(err) is told of
   * each wait. Other errors reject at once. */
  async sendMessage(op, fields, key, onRetry = () => {}) {
    const deadline = Date.now() + SEND_RETRY_FOR;
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.request(op, fields, key);
      } catch (err) {
        if (err.code !== "unavailable" || Date.now() > deadline) throw err;
        onRetry(err);
        if (!this.open) {
          // Sent again as soon as the socket is back, not a backoff later.
          await this.whenOpen(deadline - Date.now());
          continue;
        }
        await new Promise((r) => setTimeout(r, retryDelay(err, attempt)));
      }
    }
  }

  on(ch, fn) {
    if (!this.handlers.has(ch)) this.handlers.set(ch, new Set());
    this.handlers.get(ch).add(fn);
  }

  /** Follows a session; sub.since() is read at every (re)subscribe. */
  follow(session, sub) {
    this.subs.set(session, sub);
    if (this.open) this.subscribe(session, sub);
  }

  subscribe(session, sub) {
    // batch: the replay comes in pages and a busy tab gets the events that
    // queued up in one session/events frame, deltas merged (docs/protocol.md).
    this.request("subscribe", { session, since: sub.since(), render: "html", batch: true }).then(
      (res) => sub.onSubscribed?.(res),
      (err) => {
        if (err.code === "unavailable") return; // the reconnect resubscribes
        this.subs.delete(session);
        sub.onFail(err);
      },
    );
  }

  /** Drops the subscription and follows again from since (gap repair). */
  resubscribe(session) {
    const sub = this.subs.get(session);
    if (!sub || !this.open) return;
    this.request("unsubscribe", { session })
      .then(() => this.subscribe(session, sub))
      .catch(() => {});
  }
}
