// Workspaces in the browser: the new-session form's workspace choice, and
// on a chat page the banner that follows a clone until the workspace is
// ready (the composer waits meanwhile; the server refuses early messages
// with workspace_not_ready anyway).

/** The new-session form: Enter in its prompt starts the session the way
 * Enter sends in the composer (Shift+Enter adds a line), and the
 * workspace radio whose field the user touches is checked. */
export function initNewSessionForm() {
  const prompt = document.getElementById("new-prompt");
  prompt?.addEventListener("keydown", (e) => {
    if (e.key !== "Enter" || e.shiftKey || e.altKey || e.isComposing) return;
    e.preventDefault();
    prompt.form?.requestSubmit();
  });
  const fieldset = document.getElementById("ws-choice");
  if (!fieldset) return;
  const pick = (id) => {
    const radio = document.getElementById(id);
    if (radio) radio.checked = true;
  };
  document.getElementById("ws-path")?.addEventListener("change", () => pick("ws-dir"));
  document.getElementById("ws-source")?.addEventListener("input", () => pick("ws-clone"));
}

export class WorkspaceBanner {
  /** @param {HTMLElement} chat */
  constructor(chat) {
    this.chat = chat;
    this.banner = chat.querySelector("#workspace-banner");
    this.progress = chat.querySelector("#workspace-progress");
    this.setComposer(chat.dataset.preparing === "1");
  }

  /** Enables or disables the composer while the workspace is prepared. */
  setComposer(preparing) {
    this.chat.dataset.preparing = preparing ? "1" : "0";
    const input = this.chat.querySelector("#composer-input");
    const send = this.chat.querySelector("#send-btn");
    if (input) {
      input.disabled = preparing;
      input.placeholder = preparing
        ? "The workspace is being prepared; you can write when it is ready"
        : "Message the agent — Enter sends, Shift+Enter adds a line";
    }
    if (send) send.disabled = preparing;
    if (!preparing) input?.focus();
  }

  /** Applies a workspace/progress push. */
  onProgress(p) {
    if (!p) return;
    if (p.done) {
      this.banner?.remove();
      this.banner = null;
      this.setComposer(false);
      return;
    }
    if (this.progress) {
      const pct = p.percent >= 0 && p.phase ? `${p.phase}: ${p.percent}%` : p.line || "";
      this.progress.textContent = pct;
    }
  }
}
