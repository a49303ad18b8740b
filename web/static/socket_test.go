package static

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// The browser's send retry, run by node without a browser: a send refused
// unavailable with retryAfter (a session moving between replicas) is sent
// again under the same key, no sooner than retryAfter; other errors are
// not retried.
func TestSocketSendRetriesWithTheSameKey(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("!!! SKIPPING: node is not installed; the browser's retry is untested !!!")
	}
	abs, err := filepath.Abs("socket.js")
	if err != nil {
		t.Fatal(err)
	}
	script := `
const { Socket, retryDelay } = await import(process.argv[1]);
const fail = (m) => { console.error(m); process.exit(1); };
for (let i = 0; i < 50; i++) {
  const d = retryDelay({ code: "unavailable" }, 0);
  if (d < 125 || d > 250) fail("backoff " + d);
  if (retryDelay({ code: "unavailable", retryAfter: 1 }, 0) < 1000) fail("retryAfter ignored");
}
const s = Object.create(Socket.prototype);
s.open = true;
const keys = [];
let n = 0;
s.request = async (op, fields, key) => {
  keys.push(key);
  if (++n === 1) throw { code: "unavailable", message: "moving", retryAfter: 1 };
  return { ok: true, messageId: "m1" };
};
const start = Date.now();
const res = await s.sendMessage("followup", { session: "s1", content: "hi" }, "k1");
if (res.messageId !== "m1") fail("answer " + JSON.stringify(res));
if (keys.length !== 2 || keys.some((k) => k !== "k1")) fail("keys " + JSON.stringify(keys));
if (Date.now() - start < 1000) fail("retried before retryAfter");
s.request = async () => { throw { code: "conflict", message: "no" }; };
let threw = false;
try { await s.sendMessage("followup", {}, "k2"); } catch (e) { threw = e.code === "conflict"; }
if (!threw) fail("a conflict was retried or swallowed");
`
	out, err := exec.Command(node, "--input-type=module", "-e", script, "file://"+abs).CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
}
