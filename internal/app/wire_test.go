package app_test

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"harness/client"
	"harness/internal/driver"
	"harness/internal/llm"
	"harness/internal/service"
	"harness/internal/session"
	"harness/internal/workspace"
	"harness/internal/ws"
)

// The client package copies the wire vocabulary (it must not import
// internal/). These tests hold the copies to the server's types: every
// field one side writes, the other reads and writes back unchanged.

// wirePair is a server wire type and the client type that reads (or
// sends) the same JSON. Types reachable through their fields are checked
// with them.
type wirePair struct {
	server, client reflect.Type
	// ignore are JSON paths one side has and the other deliberately
	// lacks, with the reason.
	ignore map[string]string
}

func pairOf[S, C any](ignore map[string]string) wirePair {
	return wirePair{reflect.TypeFor[S](), reflect.TypeFor[C](), ignore}
}

// wirePairs are the REST views and bodies, WebSocket requests and answers,
// and event parts the client reads or sends.
var wirePairs = []wirePair{
	pairOf[service.SessionRow, client.SessionRow](nil),
	pairOf[service.Session, client.Session](nil),
	pairOf[service.SessionList, client.SessionList](nil),
	pairOf[service.NewSession, client.NewSession](nil),
	pairOf[service.Patch, client.Patch](nil),
	pairOf[service.EventPage, client.EventPage](map[string]string{
		"events[].from": "written by the WebSocket's merged session/events pushes only, not in a stored event",
	}),
	pairOf[session.Event, client.Event](map[string]string{
		"from": "written by the WebSocket's merged session/events pushes only, not in a stored event",
	}),
	pairOf[service.ContextMeter, client.ContextMeter](nil),
	pairOf[service.CompactResult, client.CompactResult](nil),
	pairOf[service.Providers, client.Providers](nil),
	pairOf[service.Member, client.Member](nil),
	pairOf[service.ShareLink, client.ShareLink](nil),
	pairOf[service.NewShareLink, client.NewShareLink](nil),
	pairOf[service.AttachmentInfo, client.Attachment](nil),
	pairOf[service.Error, client.Error](nil),
	pairOf[workspace.Root, client.WorkspaceRoot](nil),
	pairOf[workspace.DirEntry, client.WorkspaceDir](nil),
	pairOf[ws.Request, client.Request](nil),
	pairOf[ws.Response, client.Response](nil),
	pairOf[driver.WorkspaceProgress, client.WorkspaceProgress](nil),
	pairOf[driver.Queue, client.Queue](nil),
	pairOf[driver.Interaction, client.Interaction](nil),
	pairOf[llm.Message, client.Message](nil), // user/message's data
	pairOf[llm.Failure, client.Failure](nil), // agent/error's error
	pairOf[session.Answer, client.Answer](nil),
}

// rawEventData is why the client has no type for an event's data: it
// hands Event.Data to its caller undecoded.
const rawEventData = "the client hands Event.Data over undecoded"

// clientEventData are the event types whose data a client type reads;
// every other type of session.KnownTypes must be in rawEvents.
var clientEventData = map[session.Type]reflect.Type{
	session.TypeUserMessage: reflect.TypeFor[client.Message](),
}

// unpaired are the server types of the wire files (serverFiles) with no
// entry in wirePairs, with the reason.
var (
	serverFiles = []string{
		"internal/service/types.go", "internal/ws/protocol.go", "internal/llm/message.go",
	}
	unpaired = map[string]string{
		"ws.Push":           "read by client.Push, checked frame by frame in TestWirePushes",
		"service.ListQuery": "the client sends it as query parameters (ListOptions)",
		"service.Message":   "the client sends REST message bodies as literal maps (SendMessage, SendImages)",
	}
	// clientOnly are client types no server type writes.
	clientOnly = map[string]string{
		"client.Client":           "the REST client itself",
		"client.Conn":             "the WebSocket connection itself",
		"client.Subscription":     "a subscription's state",
		"client.SubscribeOptions": "options of Conn.Subscribe, sent as Request fields",
		"client.FollowOptions":    "options of Client.Follow",
		"client.ListOptions":      "sent as query parameters",
		"client.Push":             "checked frame by frame in TestWirePushes (it decodes through its own UnmarshalJSON)",
	}
)

// wireFiller fills both sides' values; the overrides are values whose
// encoding checks them.
func wireFiller(t *testing.T) *filler {
	t.Helper()
	ev, err := new(filler).filled(reflect.TypeFor[session.Event]())
	if err != nil {
		t.Fatal(err)
	}
	ev.Elem().FieldByName("SurfaceOp").Set(reflect.ValueOf(session.Replace(3, 4)))
	stored, err := json.Marshal(ev.Interface())
	if err != nil {
		t.Fatal(err)
	}
	return &filler{
		types: map[reflect.Type]func() any{
			reflect.TypeFor[session.SurfaceOp](): func() any { return *session.Replace(3, 4) },
		},
		fields: map[string]func() any{
			// A page's events are stored events, sent as they are.
			"service.EventPage.Events": func() any { return []json.RawMessage{stored} },
			"client.Event.SurfaceOp":   func() any { return json.RawMessage(`{"op":"replace","start":3,"end":4}`) },
		},
	}
}

// TestWireVocabulary round-trips every pair both ways: a value of one
// side with every field set is encoded, decoded into the other side's
// type refusing unknown fields (a field the receiver lacks), encoded again
// and compared (a field the receiver drops or renames).
func TestWireVocabulary(t *testing.T) {
	t.Parallel()
	f := wireFiller(t)
	for _, p := range wirePairs {
		t.Run(p.server.String(), func(t *testing.T) {
			for _, problem := range roundTrip(f, p.server, p.client, p.ignore) {
				t.Errorf("server %s → client %s: %s", p.server, p.client, problem)
			}
			for _, problem := range roundTrip(f, p.client, p.server, p.ignore) {
				t.Errorf("client %s → server %s: %s", p.client, p.server, problem)
			}
		})
	}
}

// roundTrip sends a filled from through to and lists what did not come
// back.
func roundTrip(f *filler, from, to reflect.Type, ignore map[string]string) []string {
	v, err := f.filled(from)
	if err != nil {
		return []string{"fill: " + err.Error()}
	}
	sent, err := json.Marshal(v.Interface())
	if err != nil {
		return []string{"encode: " + err.Error()}
	}
	want, err := generic(sent)
	if err != nil {
		return []string{"decode: " + err.Error()}
	}
	if len(ignore) > 0 {
		strip(want, slices.Sorted(mapKeys(ignore)))
		if sent, err = json.Marshal(want); err != nil {
			return []string{"encode: " + err.Error()}
		}
	}
	out := reflect.New(to)
	d := json.NewDecoder(bytes.NewReader(sent))
	d.DisallowUnknownFields()
	if err := d.Decode(out.Interface()); err != nil {
		return []string{"decode: " + err.Error() + " (sent " + string(sent) + ")"}
	}
	back, err := json.Marshal(out.Interface())
	if err != nil {
		return []string{"encode back: " + err.Error()}
	}
	got, err := generic(back)
	if err != nil {
		return []string{"decode back: " + err.Error()}
	}
	return jsonDiff("", want, got)
}

func mapKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestWirePushes sends WebSocket pushes of every field through
// client.Push, which decodes them through its own UnmarshalJSON (so
// DisallowUnknownFields does not reach it): what the client keeps, written
// back as the server writes it, must be the frame.
func TestWirePushes(t *testing.T) {
	t.Parallel()
	channels := []struct {
		server ws.Channel
		client string
	}{
		{ws.ChEvent, client.ChEvent}, {ws.ChEvents, client.ChEvents}, {ws.ChReplayDone, client.ChReplayDone},
		{ws.ChClosed, client.ChClosed}, {ws.ChStatus, client.ChStatus}, {ws.ChInbox, client.ChInbox},
		{ws.ChInboxInserted, client.ChInboxInserted}, {ws.ChInboxClaimed, client.ChInboxClaimed},
		{ws.ChInboxDiscarded, client.ChInboxDiscarded}, {ws.ChInteractionRequested, client.ChInteractionRequested},
		{ws.ChInteractionResolved, client.ChInteractionResolved}, {ws.ChAllowed, client.ChAllowed},
		{ws.ChWorkspace, client.ChWorkspace}, {ws.ChAgentError, client.ChAgentError},
		{ws.ChSessionsChanged, client.ChSessionsChanged}, {ws.ChError, client.ChError},
	}
	for _, c := range channels {
		if string(c.server) != c.client {
			t.Errorf("channel %q is %q in the client", c.server, c.client)
		}
	}
	if int(ws.CloseSlowConsumer) != client.CloseSlowConsumer {
		t.Errorf("CloseSlowConsumer: server %d, client %d", ws.CloseSlowConsumer, client.CloseSlowConsumer)
	}
	f := wireFiller(t)
	for _, ch := range []ws.Channel{ws.ChStatus, ws.ChAgentError, ws.ChError} {
		t.Run(string(ch), func(t *testing.T) {
			v, err := f.filled(reflect.TypeFor[ws.Push]())
			if err != nil {
				t.Fatal(err)
			}
			p := v.Interface().(*ws.Push)
			p.Ch = ch
			// A push carries one error: agent/error a model failure, the
			// others a coded error.
			if ch == ws.ChAgentError {
				p.Error = nil
				p.Failure = &llm.Failure{Message: "m", Code: "c", Status: 7, RetryAfterMs: 7, RequestID: "r"}
			} else {
				p.Failure = nil
				p.Error = &service.Error{Code: "c", Message: "m", RetryAfter: 7}
			}
			frame, err := json.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			if problems := pushRoundTrip(frame); len(problems) > 0 {
				t.Errorf("frame %s:\n%s", frame, strings.Join(problems, "\n"))
			}
		})
	}
	t.Run("session/event", func(t *testing.T) {
		ev, err := f.filled(reflect.TypeFor[session.Event]())
		if err != nil {
			t.Fatal(err)
		}
		raw, err := session.AppendEvent(nil, *ev.Interface().(*session.Event))
		if err != nil {
			t.Fatal(err)
		}
		// The frame as ws's eventFrameRaw and withHTML write it.
		frame := []byte(`{"ch":"session/event","session":"s","event":` + string(raw) + `,"html":"h"}`)
		if problems := pushRoundTrip(frame); len(problems) > 0 {
			t.Errorf("frame %s:\n%s", frame, strings.Join(problems, "\n"))
		}
	})
}

// TestWireChangedRow: a sessions/changed push's session is a full row,
// which client.Push hands over as Row.
func TestWireChangedRow(t *testing.T) {
	t.Parallel()
	v, err := wireFiller(t).filled(reflect.TypeFor[service.SessionRow]())
	if err != nil {
		t.Fatal(err)
	}
	row, err := json.Marshal(v.Interface())
	if err != nil {
		t.Fatal(err)
	}
	// The frame as ws's changedPush writes it.
	var p client.Push
	if err := json.Unmarshal([]byte(`{"ch":"sessions/changed","session":`+string(row)+`}`), &p); err != nil {
		t.Fatal(err)
	}
	if p.Row == nil || p.Deleted || p.Session != p.Row.ID {
		t.Fatalf("push %+v: want a row", p)
	}
	back, err := json.Marshal(p.Row)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := generic(row)
	got, _ := generic(back)
	for _, d := range jsonDiff("", want, got) {
		t.Error(d)
	}
}

// pushRoundTrip decodes frame into a client.Push and compares the frame
// with what the push holds.
func pushRoundTrip(frame []byte) []string {
	var p client.Push
	if err := json.Unmarshal(frame, &p); err != nil {
		return []string{"decode " + string(frame) + ": " + err.Error()}
	}
	back, err := json.Marshal(p)
	if err != nil {
		return []string{"encode back: " + err.Error()}
	}
	got, err := generic(back)
	if err != nil {
		return []string{err.Error()}
	}
	// The fields client.Push keeps out of its own encoding.
	m := got.(map[string]any)
	if p.Session != "" {
		m["session"] = p.Session
	}
	var errField any
	switch {
	case p.Failure != nil:
		errField = p.Failure
	case p.Error != nil:
		errField = p.Error
	}
	if errField != nil {
		b, _ := json.Marshal(errField)
		m["error"], _ = generic(b)
	}
	want, err := generic(frame)
	if err != nil {
		return []string{err.Error()}
	}
	return jsonDiff("", want, m)
}

// TestWireCoverage fails on a wire type with no client counterpart that
// is not listed as not client-facing: each event type's data, each struct
// of the server's wire files, and each struct of the client package.
func TestWireCoverage(t *testing.T) {
	t.Parallel()
	for typ := range session.KnownTypes {
		if _, ok := clientEventData[typ]; ok {
			continue
		}
		if !rawEvents[typ] {
			t.Errorf("event type %s: not in clientEventData nor in rawEvents (%s): say which", typ, rawEventData)
		}
	}
	for typ := range rawEvents {
		if !session.KnownTypes[typ] {
			t.Errorf("rawEvents lists %s, which is not in session.KnownTypes", typ)
		}
	}

	servers, clients := map[string]bool{}, map[string]bool{}
	for _, p := range wirePairs {
		reachable(p.server, servers)
		reachable(p.client, clients)
	}
	for _, rt := range clientEventData {
		reachable(rt, clients)
	}
	root := moduleRoot(t)
	for _, file := range serverFiles {
		pkg := filepath.Base(filepath.Dir(file))
		for _, name := range structTypes(t, filepath.Join(root, file)) {
			full := pkg + "." + name
			if !servers[full] && unpaired[full] == "" {
				t.Errorf("%s (%s) has no client counterpart: pair it in wirePairs or list it in unpaired with the reason", full, file)
			}
		}
	}
	files, err := filepath.Glob(filepath.Join(root, "client", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		for _, name := range structTypes(t, file) {
			full := "client." + name
			if !clients[full] && clientOnly[full] == "" {
				t.Errorf("%s has no server counterpart: pair it in wirePairs or list it in clientOnly with the reason", full)
			}
		}
	}
}

// rawEvents are the event types whose data no client type reads
// (rawEventData).
var rawEvents = map[session.Type]bool{
	session.TypeTurnStart: true, session.TypeTurnEnd: true, session.TypeStepStart: true, session.TypeStepEnd: true,
	session.TypeAssistantChunk: true, session.TypeAssistantMessage: true, session.TypeToolCall: true,
	session.TypeToolResult: true, session.TypeToolOutput: true, session.TypeTodoWrite: true,
	session.TypeRequestHeader: true, session.TypeRequestContext: true, session.TypeInboxSpliced: true,
	session.TypeEndSeed: true, session.TypeLLMRetry: true, session.TypeLLMRetryStarted: true,
	session.TypeApprovalAsked: true, session.TypeApprovalDecided: true, session.TypeApprovalPolicy: true,
	session.TypeApprovalRevoked: true, session.TypePermissionMode: true, session.TypeModelSelected: true,
	session.TypeQuestionAsked: true, session.TypeQuestionAnswered: true, session.TypeCompactionStart: true,
	session.TypeCompactionSum: true, session.TypeCompactionPrune: true, session.TypeCompactionEnd: true,
	session.TypeSessionTitle: true, session.TypeWorkspaceReady: true, session.TypeWorkspaceFailed: true,
	session.TypeEffortSelected: true, session.TypeSubagentStarted: true, session.TypeNetworkRefused: true,
}

// reachable adds the named struct types t holds (itself, its fields',
// through pointers, slices, maps and embedding) as "pkg.Name".
func reachable(t reflect.Type, seen map[string]bool) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t.Name() == "" || seen[t.String()] {
		return
	}
	seen[t.String()] = true
	for i := range t.NumField() {
		reachable(t.Field(i).Type, seen)
	}
}

// structTypes are the exported struct types declared in file.
func structTypes(t *testing.T, file string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.TYPE {
			continue
		}
		for _, s := range g.Specs {
			ts := s.(*ast.TypeSpec)
			if _, ok := ts.Type.(*ast.StructType); ok && ts.Name.IsExported() {
				out = append(out, ts.Name.Name)
			}
		}
	}
	return out
}

// moduleRoot is the directory of go.mod (the test runs in internal/app).
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}
