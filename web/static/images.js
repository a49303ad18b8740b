// The composer's images: paste (the clipboard), drop (drag and drop onto
// the composer) or pick (the Image button) PNG, JPEG, GIF or WebP files.
// Each is uploaded at once (POST /api/sessions/{id}/attachments, the
// server sniffs and checks it) and shown as a thumbnail with a remove
// button; a message sends the ids of the uploaded images with its text.

import { csrfToken } from "./util.js";

const TYPES = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);
// At most this many images go with one message (the server's limit).
const MAX_IMAGES = 10;

export class ImageTray {
  /**
   * @param {HTMLElement} chat the #chat element
   * @param {(text: string) => void} say shows a message in the composer's hint
   */
  constructor(chat, say) {
    this.session = chat.dataset.session;
    this.form = chat.querySelector("#composer");
    this.input = chat.querySelector("#composer-input");
    this.list = chat.querySelector("#composer-images");
    this.button = chat.querySelector("#attach-btn");
    this.picker = chat.querySelector("#attach-input");
    this.max = Number(this.form?.dataset.attachMax) || 10 << 20;
    this.say = say;
    /** @type {{file: File, li: HTMLElement, id?: string, done: Promise<void>, failed?: string}[]} */
    this.items = [];
    if (!this.form || !this.list || !this.button || !this.picker) return;
    this.bind();
  }

  bind() {
    this.button.hidden = false;
    this.button.addEventListener("click", () => this.picker.click());
    this.picker.addEventListener("change", () => {
      this.add([...this.picker.files]);
      this.picker.value = "";
    });
    // A paste with image files attaches them; text pastes as usual.
    this.input.addEventListener("paste", (e) => {
      const files = [...(e.clipboardData?.files || [])].filter((f) => f.type.startsWith("image/"));
      if (files.length === 0) return;
      e.preventDefault();
      this.add(files);
    });
    this.form.addEventListener("dragover", (e) => {
      if (![...(e.dataTransfer?.types || [])].includes("Files")) return;
      e.preventDefault();
      e.dataTransfer.dropEffect = "copy";
      this.form.classList.add("dropping");
    });
    this.form.addEventListener("dragleave", (e) => {
      if (!this.form.contains(e.relatedTarget)) this.form.classList.remove("dropping");
    });
    this.form.addEventListener("drop", (e) => {
      this.form.classList.remove("dropping");
      const files = [...(e.dataTransfer?.files || [])];
      if (files.length === 0) return;
      e.preventDefault();
      this.add(files);
    });
    this.list.addEventListener("click", (e) => {
      const b = e.target.closest("[data-action=remove-image]");
      if (b) this.remove(b.closest("li"));
    });
  }

  get count() {
    return this.items.length;
  }

  /** Checks, shows and uploads files. */
  add(files) {
    for (const file of files) {
      if (this.items.length >= MAX_IMAGES) {
        this.say(`A message takes at most ${MAX_IMAGES} images.`);
        break;
      }
      if (!TYPES.has(file.type)) {
        this.say(`${file.name || "That file"} is not a PNG, JPEG, GIF or WebP image.`);
        continue;
      }
      if (file.size > this.max) {
        this.say(`${file.name || "The image"} is larger than ${sizeText(this.max)}.`);
        continue;
      }
      const item = { file, li: this.thumbnail(file) };
      item.done = this.upload(item);
      this.items.push(item);
      this.list.append(item.li);
    }
    this.changed();
  }

  thumbnail(file) {
    const li = document.createElement("li");
    li.className = "composer-image";
    li.dataset.state = "uploading";
    const name = file.name || "pasted image";
    const img = document.createElement("img");
    img.alt = name;
    const label = document.createElement("span");
    label.className = "composer-image-name";
    label.textContent = `${name} · uploading…`;
    const remove = document.createElement("button");
    remove.type = "button";
    remove.className = "icon";
    remove.dataset.action = "remove-image";
    remove.setAttribute("aria-label", `Remove image ${name}`);
    remove.title = "Remove";
    remove.textContent = "✕";
    li.append(img, label, remove);
    return li;
  }

  async upload(item) {
    const body = new FormData();
    body.append("file", item.file, item.file.name || "pasted-image");
    const name = item.file.name || "pasted image";
    const label = item.li.querySelector(".composer-image-name");
    try {
      const res = await fetch(`/api/sessions/${encodeURIComponent(this.session)}/attachments`, {
        method: "POST",
        body,
        credentials: "same-origin",
        headers: { Accept: "application/json", "X-CSRF-Token": csrfToken() },
      });
      const data = await res.json().catch(() => ({}));
      if (!res.ok) throw new Error(data.error?.message || `upload failed (${res.status})`);
      item.id = data.id;
      item.li.dataset.state = "ready";
      item.li.dataset.attachment = data.id;
      const img = item.li.querySelector("img");
      img.src = `/sessions/${encodeURIComponent(this.session)}/attachments/${encodeURIComponent(data.id)}`;
      img.alt = `${name}, ${data.width} × ${data.height}`;
      label.textContent = `${name} · ${data.width} × ${data.height}`;
    } catch (err) {
      item.failed = err.message || "upload failed";
      item.li.dataset.state = "failed";
      label.textContent = `${name} · ${item.failed}`;
      this.say(`${name}: ${item.failed}`);
    }
  }

  remove(li) {
    const i = this.items.findIndex((it) => it.li === li);
    if (i < 0) return;
    this.items.splice(i, 1);
    li.remove();
    this.changed();
    this.input.focus();
  }

  /** Waits for the uploads and returns the ids to send; null (with the
   * reason said) when an image did not upload. */
  async ids() {
    await Promise.all(this.items.map((it) => it.done));
    const failed = this.items.find((it) => it.failed);
    if (failed) {
      this.say(`Remove the image that did not upload (${failed.file.name || "pasted image"}) to send.`);
      return null;
    }
    return this.items.map((it) => it.id);
  }

  clear() {
    this.items = [];
    this.list.replaceChildren();
    this.changed();
  }

  changed() {
    this.list.hidden = this.items.length === 0;
    // A message of images alone needs no text.
    this.input.required = this.items.length === 0;
  }
}

function sizeText(n) {
  if (n >= 1 << 20) return `${Math.round((n / (1 << 20)) * 10) / 10} MiB`;
  return `${Math.round(n / 1024)} KiB`;
}
