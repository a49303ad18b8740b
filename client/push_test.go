package client

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestPushDecoding(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		frame string
		check func(t *testing.T, p Push)
	}{
		{"event", `{"ch":"session/event","session":"s1","event":{"seq":4,"time":9,"type":"turn/start","data":{"turn":1}},"html":"<p>x</p>"}`,
			func(t *testing.T, p Push) {
				if p.Session != "s1" || p.Event == nil || p.Event.Seq != 4 || string(p.Event.Data) != `{"turn":1}` || p.HTML != "<p>x</p>" {
					t.Errorf("%+v", p)
				}
			}},
		{"row", `{"ch":"sessions/changed","session":{"id":"s2","title":"T","status":"running","role":"viewer"}}`,
			func(t *testing.T, p Push) {
				if p.Session != "s2" || p.Row == nil || p.Row.Title != "T" || p.Row.Role != "viewer" || p.Deleted {
					t.Errorf("%+v", p)
				}
			}},
		{"deleted", `{"ch":"sessions/changed","session":{"id":"s3","deleted":true}}`,
			func(t *testing.T, p Push) {
				if p.Session != "s3" || p.Row != nil || !p.Deleted {
					t.Errorf("%+v", p)
				}
			}},
		{"agent error", `{"ch":"agent/error","session":"s","turn":2,"error":{"code":"RATE_LIMIT","message":"slow down"}}`,
			func(t *testing.T, p Push) {
				if p.Failure == nil || p.Failure.Code != "RATE_LIMIT" || p.Error != nil || p.Turn != 2 {
					t.Errorf("%+v", p)
				}
			}},
		{"error", `{"ch":"error","error":{"code":"bad_request","message":"id is required"}}`,
			func(t *testing.T, p Push) {
				if p.Error == nil || p.Error.Code != "bad_request" || p.Failure != nil {
					t.Errorf("%+v", p)
				}
			}},
		{"closed", `{"ch":"session/closed","session":"s","reason":"unauthorized","error":{"code":"unauthorized","message":"x"}}`,
			func(t *testing.T, p Push) {
				if p.Reason != "unauthorized" || p.Error == nil || p.Error.Code != "unauthorized" {
					t.Errorf("%+v", p)
				}
			}},
		{"inbox", `{"ch":"agent/inbox","session":"s","queue":{"queued":[{"id":"m","role":"user","content":[{"type":"text","text":"hi"}],"source":{"kind":"user"}}],"steering":[]}}`,
			func(t *testing.T, p Push) {
				if p.Queue == nil || len(p.Queue.Queued) != 1 || p.Queue.Queued[0].Text() != "hi" {
					t.Errorf("%+v", p)
				}
			}},
	}
	for _, tt := range tests {
		var p Push
		if err := json.Unmarshal([]byte(tt.frame), &p); err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if string(p.Raw) != tt.frame {
			t.Errorf("%s: raw %s", tt.name, p.Raw)
		}
		tt.check(t, p)
	}
}

func TestAnswerDecoding(t *testing.T) {
	t.Parallel()
	var w wireFrame
	if err := json.Unmarshal([]byte(`{"re":"7","ok":false,"error":{"code":"forbidden","message":"no"}}`), &w); err != nil {
		t.Fatal(err)
	}
	r, err := w.response()
	if err != nil || w.Re == nil || r.Re != "7" || r.OK || r.Error == nil || r.Error.Code != "forbidden" {
		t.Fatalf("%+v, %v", r, err)
	}
	if CodeOf(r.Error) != "forbidden" || CodeOf(nil) != "" {
		t.Fatal("CodeOf")
	}
}

// TestWireFrameCarriesEveryField: the reader decodes each frame once into
// wireFrame and copies it into a Response or a Push, so a field of those
// that wireFrame lacks would never be filled (Push.Workspace once was).
func TestWireFrameCarriesEveryField(t *testing.T) {
	t.Parallel()
	frame := map[string]bool{}
	for _, f := range reflect.VisibleFields(reflect.TypeFor[wireFrame]()) {
		frame[jsonName(f)] = true
	}
	// Fields of Push the reader fills from others (session, error) or
	// from the whole frame (Raw).
	derived := map[string]bool{"Session": true, "Failure": true, "Error": true, "Row": true, "Deleted": true, "Raw": true}
	for _, typ := range []reflect.Type{reflect.TypeFor[Response](), reflect.TypeFor[Push]()} {
		for _, f := range reflect.VisibleFields(typ) {
			if typ == reflect.TypeFor[Push]() && derived[f.Name] {
				continue
			}
			if !frame[jsonName(f)] {
				t.Errorf("%s.%s (%q) is not in wireFrame: the reader never fills it", typ.Name(), f.Name, jsonName(f))
			}
		}
	}
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}
