package web

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// zeros reads as endless zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// rawExchange sends a request over its own loopback connection: head (the
// request line and headers, without the blank line) and then, unless
// body is nil, all of body before it reads anything; it returns the
// server's answer, its body read, and whether the server then closed the
// connection.
func rawExchange(t *testing.T, base, head string, body io.Reader) (*http.Response, string, bool) {
	t.Helper()
	u, _ := url.Parse(base)
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A safety net so a broken server fails the test instead of hanging it.
	_ = conn.SetDeadline(time.Now().Add(2 * time.Minute))
	if _, err := io.WriteString(conn, strings.ReplaceAll(head, "\n", "\r\n")+"\r\n"); err != nil {
		t.Fatal(err)
	}
	if body != nil {
		if _, err := io.Copy(conn, body); err != nil {
			t.Fatalf("sending the body: %v (the server did not read it)", err)
		}
	}
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	_, err = br.ReadByte()
	return res, string(b), err == io.EOF
}

func wantTooLarge(t *testing.T, what string, res *http.Response, body string, closed bool, msg string) {
	t.Helper()
	var out struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	_ = json.Unmarshal([]byte(body), &out)
	if res.StatusCode != http.StatusRequestEntityTooLarge || out.Error.Code != "too_large" || !strings.Contains(out.Error.Message, msg) {
		t.Errorf("%s: %d %s, want 413 too_large saying %q", what, res.StatusCode, body, msg)
	}
	if !closed {
		t.Errorf("%s: the connection stayed open after a refused body", what)
	}
}

// TestBodyOverTheCapIsRefusedUnread: a body announced over its cap is
// answered 413 too_large before any of it is read, before routing and
// the CSRF guard (which may parse a form). A client waiting for
// 100 Continue gets the 413 instead and never sends the body; one that
// sends the whole body before reading gets the 413 too, not a reset
// connection; a chunked body is cut at the cap.
func TestBodyOverTheCapIsRefusedUnread(t *testing.T) {
	t.Parallel()
	env := newScenarioEnv(t, withSessionAPI(t))
	cookie, _ := env.login(t, actorOwner)
	const big = 60 << 20
	upload := fmt.Sprintf("POST /api/sessions/%s/attachments HTTP/1.1\nHost: x\nAuthorization: Bearer %s\nContent-Type: multipart/form-data; boundary=b\nContent-Length: %d\n", env.SessionID, env.tokens[actorOwner], big)

	// Expect: 100-continue, as curl sends for a large upload: the answer
	// comes at once (http.ReadResponse would return a 100 first if the
	// server had started to read), and the body is never sent.
	res, body, closed := rawExchange(t, env.URL, upload+"Expect: 100-continue\n", nil)
	wantTooLarge(t, "an image upload waiting for 100 Continue", res, body, closed, "the image is larger than")

	// The whole body sent before the answer is read: the server reads
	// and drops it after answering, so the client gets the 413.
	res, body, closed = rawExchange(t, env.URL, upload, io.LimitReader(zeros{}, big))
	wantTooLarge(t, "an image upload sent whole", res, body, closed, "the image is larger than")

	// A cookie request without the CSRF header, whose form the CSRF guard
	// would parse: refused before, by its length.
	imp := fmt.Sprintf("POST /api/sessions/import HTTP/1.1\nHost: x\nCookie: %s=%s\nContent-Type: multipart/form-data; boundary=b\nContent-Length: %d\nExpect: 100-continue\n", sessionCookie, cookie, maxImportBody+1)
	res, body, closed = rawExchange(t, env.URL, imp, nil)
	wantTooLarge(t, "an import over the cap, by cookie", res, body, closed, "request body is larger than 65536 KiB")

	// A page form has the default cap.
	form := fmt.Sprintf("POST /sessions/%s/rename HTTP/1.1\nHost: x\nCookie: %s=%s\nContent-Type: application/x-www-form-urlencoded\nContent-Length: %d\nExpect: 100-continue\n", env.SessionID, sessionCookie, cookie, maxAPIBody+1)
	res, body, closed = rawExchange(t, env.URL, form, nil)
	if res.StatusCode != http.StatusRequestEntityTooLarge || !closed {
		t.Errorf("a page form over the cap: %d %.200s", res.StatusCode, body)
	}

	// Chunked (no length announced): the reader stops at the cap.
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, env.URL+"/api/sessions/"+env.SessionID+"/attachments?name=x.png", io.MultiReader(io.LimitReader(zeros{}, 11<<20)))
	req.Header.Set("Authorization", "Bearer "+env.tokens[actorOwner])
	req.Header.Set("Content-Type", "application/octet-stream")
	if res, body := env.do(t, req); res.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(body, "too_large") {
		t.Errorf("a chunked image over the cap: %d %s", res.StatusCode, body)
	}
}
