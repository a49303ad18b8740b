// The chat header's reasoning-effort control (#effort-select): writers
// change it with set_effort; every viewer's select follows the durable
// model/effort events, and a model/selected event offers the new model's
// efforts (from the route map the page carries for writers).

const LABELS = { off: "Off", low: "Low", high: "High", max: "Max" };

export class EffortControl {
  /**
   * @param {HTMLElement} chat
   * @param {(op: string, fields: object) => Promise<any>} call sends a command
   */
  constructor(chat, call) {
    this.select = chat.querySelector("#effort-select");
    this.wrap = chat.querySelector("#effort-control");
    if (!this.select) return;
    this.call = call;
    // current is the session's choice as the log says it ("" = default):
    // the select shows it whenever the model lists it.
    this.current = this.select.dataset.current || "";
    try {
      this.routes = JSON.parse(this.select.dataset.routes || "null");
    } catch {
      this.routes = null;
    }
    this.select.addEventListener("change", () => this.change());
  }

  async change() {
    const value = this.select.value;
    this.select.setAttribute("aria-busy", "true");
    try {
      await this.call("set_effort", { effort: value });
      this.current = value;
    } catch {
      // Refused (the hint says why): show what the session still uses.
      this.show();
    } finally {
      this.select.removeAttribute("aria-busy");
    }
  }

  /** Follows the log: a new choice, or a new model's efforts. */
  onEvent(ev) {
    if (!this.select) return;
    if (ev.type === "model/effort") {
      this.current = ev.data?.effort || "";
      this.show();
    } else if (ev.type === "model/selected" && this.routes) {
      const list = this.routes[ev.data?.provider] || [];
      const m = list.find((x) => x.id === ev.data?.model) || list[0];
      this.options(m?.efforts || [], m?.default || "");
      this.show();
    }
  }

  /** Rebuilds the options: the default, then the model's efforts. */
  options(efforts, def) {
    const opt = (value, text) => {
      const o = document.createElement("option");
      o.value = value;
      o.textContent = text;
      return o;
    };
    const items = [opt("", def ? `Default (${LABELS[def] || def})` : "Default")];
    for (const e of efforts) items.push(opt(e, LABELS[e] || e));
    this.select.replaceChildren(...items);
    if (this.wrap) this.wrap.hidden = efforts.length === 0;
  }

  /** Selects the session's choice; one the model does not list shows as
   * the default (the server does not send it to this model). */
  show() {
    const listed = [...this.select.options].some((o) => o.value === this.current);
    this.select.value = listed ? this.current : "";
  }
}
