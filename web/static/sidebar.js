// The sidebar's recent sessions and the session list: titles and status
// dots follow sessions/changed pushes.

export function followSessions(socket) {
  socket.on("sessions/changed", (msg) => {
    const row = msg.session;
    if (!row || !row.id) return;
    const sel = `[data-session="${CSS.escape(row.id)}"]`;
    if (row.deleted) {
      for (const el of document.querySelectorAll(`.side-link${sel}, .session-row${sel}`)) el.remove();
      return;
    }
    let link = document.querySelector(`.side-link${sel}`);
    const list = document.getElementById("side-sessions");
    if (!link && list && !row.archived) {
      link = sideLink(row);
      list.prepend(link);
    }
    if (link && row.archived) link.remove();
    for (const el of document.querySelectorAll(`${sel} .dot`)) {
      el.dataset.status = row.status;
      el.title = row.status;
    }
    const title = row.title || "Untitled session";
    for (const el of document.querySelectorAll(`.side-link${sel} .side-title, .session-row${sel} .session-title`)) {
      el.textContent = title;
    }
  });
}

function sideLink(row) {
  const a = document.createElement("a");
  a.className = "side-link";
  a.href = `/sessions/${encodeURIComponent(row.id)}`;
  a.dataset.session = row.id;
  const dot = document.createElement("span");
  dot.className = "dot";
  const t = document.createElement("span");
  t.className = "side-title";
  a.append(dot, t);
  return a;
}
