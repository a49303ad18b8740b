package replica

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"time"
)

// Requests between replicas carry the sender's id, the time and an
// HMAC-SHA256 over method, path and query, time and body digest, under a
// key derived from the secret key every replica shares. A request older or
// newer than maxSkew is refused, which bounds a replay.
const (
	headerFrom = "X-Harness-Replica"
	headerTime = "X-Harness-Time"
	headerSig  = "X-Harness-Signature"
	maxSkew    = 30 * time.Second
)

var errBadSignature = errors.New("replica request: missing or invalid signature")

func signature(key []byte, method, uri, ts string, body []byte) string {
	d := sha256.Sum256(body)
	m := hmac.New(sha256.New, key)
	m.Write([]byte(method + "\n" + uri + "\n" + ts + "\n" + hex.EncodeToString(d[:])))
	return hex.EncodeToString(m.Sum(nil))
}

func sign(r *http.Request, key []byte, from string, body []byte, now time.Time) {
	ts := strconv.FormatInt(now.UnixMilli(), 10)
	r.Header.Set(headerFrom, from)
	r.Header.Set(headerTime, ts)
	r.Header.Set(headerSig, signature(key, r.Method, r.URL.RequestURI(), ts, body))
}

func verify(r *http.Request, key []byte, body []byte, now time.Time) error {
	ts := r.Header.Get(headerTime)
	ms, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || r.Header.Get(headerFrom) == "" {
		return errBadSignature
	}
	if d := now.Sub(time.UnixMilli(ms)); d > maxSkew || d < -maxSkew {
		return errBadSignature
	}
	want := signature(key, r.Method, r.URL.RequestURI(), ts, body)
	if !hmac.Equal([]byte(want), []byte(r.Header.Get(headerSig))) {
		return errBadSignature
	}
	return nil
}
