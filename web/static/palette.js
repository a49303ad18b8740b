// The composer's slash-command palette: typing "/" at the start of the
// composer lists the commands; typing filters them, ArrowUp/ArrowDown move
// the selection, Enter (or Tab) runs the selected command, or completes it
// when it takes an argument ("/mode " then lists the modes), and Escape
// closes the list. The list is a listbox whose selected option is the
// composer's aria-activedescendant, so the focus never leaves the
// composer. Every command uses an action the page already has.

let nextId = 0;

export class Palette {
  /**
   * @param {import("./composer.js").Controls} controls
   */
  constructor(controls) {
    this.controls = controls;
    this.input = controls.input;
    this.chat = controls.chat;
    this.options = [];
    this.active = -1;
    // The text the palette was closed for with Escape: it stays closed
    // until the text changes.
    this.dismissed = null;
    this.list = document.createElement("ul");
    this.list.id = "slash-palette";
    this.list.className = "palette";
    this.list.setAttribute("role", "listbox");
    this.list.setAttribute("aria-label", "Commands");
    this.list.hidden = true;
    // A click chooses; pressing the mouse must not take the focus from
    // the composer.
    this.list.addEventListener("mousedown", (e) => e.preventDefault());
    this.list.addEventListener("click", (e) => {
      const li = e.target.closest("[role=option]");
      if (li) this.choose(Number(li.dataset.index));
    });
    this.input.before(this.list);
    this.input.setAttribute("aria-autocomplete", "list");
    this.input.setAttribute("aria-controls", this.list.id);
    this.input.addEventListener("input", () => this.update());
    this.input.addEventListener("blur", () => this.close());
  }

  get open() {
    return !this.list.hidden;
  }

  /** The commands, each {name, desc, args?(): [{value, label}], run(arg)}. */
  commands() {
    const c = this.controls;
    const mode = this.chat.querySelector("#mode-select");
    const model = this.chat.querySelector("#model-select");
    const choose = (select) => (value) => {
      select.value = value;
      // The select's own change handler sends set_mode / set_model.
      select.dispatchEvent(new Event("change", { bubbles: true }));
    };
    const list = [
      { name: "compact", desc: "Summarise older history to free the context", run: () => c.compact() },
    ];
    if (model) {
      list.push({ name: "model", desc: "Switch the model", args: () => optionsOf(model), run: choose(model) });
    }
    if (mode) {
      list.push({ name: "mode", desc: "Set the permission mode", args: () => optionsOf(mode), run: choose(mode) });
    }
    if (document.getElementById("fork-form")) {
      list.push({ name: "fork", desc: "Copy this session into a new one", run: () => document.getElementById("fork-form").requestSubmit() });
    }
    if (document.getElementById("export-link")) {
      list.push({ name: "export", desc: "Download the session log", run: () => document.getElementById("export-link").click() });
    }
    list.push(
      { name: "clear", desc: "Remove every queued message", run: () => c.clearQueue() },
      { name: "help", desc: "List the commands and keys", run: () => c.showHelp(list) },
    );
    return list;
  }

  /** Recomputes the options from the composer's text. */
  update() {
    const text = this.input.value;
    if (text !== this.dismissed) this.dismissed = null;
    const m = /^\/([\w-]*)(?:( )(.*))?$/.exec(text);
    if (!m || this.dismissed !== null) {
      this.close();
      return;
    }
    const [, name, space, arg = ""] = m;
    const commands = this.commands();
    let options;
    if (!space) {
      const q = name.toLowerCase();
      // A command typed in full comes first ("/mode" before "/model").
      options = commands
        .filter((cmd) => cmd.name.startsWith(q))
        .sort((a, b) => (b.name === q) - (a.name === q))
        .map((cmd) => ({ cmd, label: "/" + cmd.name, desc: cmd.desc }));
    } else {
      // "/mode …": the command's arguments, filtered by what follows.
      const cmd = commands.find((x) => x.name === name);
      const q = arg.trim().toLowerCase();
      if (cmd?.args) {
        options = cmd.args()
          .filter((a) => a.value.toLowerCase().includes(q) || a.label.toLowerCase().includes(q))
          .map((a) => ({ cmd, arg: a.value, label: `/${cmd.name} ${a.value}`, desc: a.label }));
      } else {
        options = cmd && q === "" ? [{ cmd, label: "/" + cmd.name, desc: cmd.desc }] : [];
      }
    }
    this.show(options);
  }

  show(options) {
    this.options = options;
    if (options.length === 0) {
      this.close();
      return;
    }
    const items = options.map((o, i) => {
      const li = document.createElement("li");
      li.id = `palette-opt-${++nextId}`;
      li.className = "palette-opt";
      li.dataset.index = String(i);
      li.setAttribute("role", "option");
      const name = document.createElement("span");
      name.className = "palette-name";
      name.textContent = o.label;
      const desc = document.createElement("span");
      desc.className = "palette-desc";
      desc.textContent = o.desc;
      li.append(name, desc);
      return li;
    });
    this.list.replaceChildren(...items);
    this.list.hidden = false;
    this.select(0);
  }

  select(i) {
    const items = this.list.children;
    if (items.length === 0) return;
    this.active = (i + items.length) % items.length;
    for (const [j, li] of [...items].entries()) li.setAttribute("aria-selected", String(j === this.active));
    const li = items[this.active];
    this.input.setAttribute("aria-activedescendant", li.id);
    li.scrollIntoView({ block: "nearest" });
  }

  close() {
    if (this.list.hidden) return;
    this.list.hidden = true;
    this.list.replaceChildren();
    this.options = [];
    this.active = -1;
    this.input.removeAttribute("aria-activedescendant");
  }

  /** Handles a composer key while the palette is open; true when it did. */
  keydown(e) {
    if (!this.open || e.isComposing || e.ctrlKey || e.metaKey || e.altKey) return false;
    switch (e.key) {
      case "ArrowDown":
        this.select(this.active + 1);
        break;
      case "ArrowUp":
        this.select(this.active - 1);
        break;
      case "Escape":
        // Closes the list only: the running turn goes on (the page's Esc
        // handler sees defaultPrevented).
        this.dismissed = this.input.value;
        this.close();
        break;
      case "Enter":
      case "Tab":
        if (e.shiftKey) return false;
        this.choose(this.active);
        break;
      default:
        return false;
    }
    e.preventDefault();
    return true;
  }

  /** Runs option i, or completes its command when it needs an argument. */
  choose(i) {
    const o = this.options[i];
    if (!o) return;
    if (o.cmd.args && o.arg === undefined) {
      this.input.value = `/${o.cmd.name} `;
      this.update();
      return;
    }
    this.input.value = "";
    this.controls.autosize();
    this.close();
    o.cmd.run(o.arg);
  }
}

/** The options of a select as command arguments. */
function optionsOf(select) {
  return [...select.options].map((o) => ({ value: o.value, label: o.textContent.trim() }));
}
