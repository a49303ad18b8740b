package session

import (
	"errors"
	"fmt"
	"testing"
)

func TestErrorCodes(t *testing.T) {
	t.Parallel()
	_, err := Fork(newTestLog(), 3)
	wrapped := fmt.Errorf("fork child: %w", err)
	if !errors.Is(wrapped, &Error{Code: CodeInvalidBoundary}) || errors.Is(wrapped, &Error{Code: CodeOpenTurn}) {
		t.Fatalf("errors.Is by code failed for %v", wrapped)
	}
	if CodeOf(wrapped) != CodeInvalidBoundary || CodeOf(errors.New("plain")) != "" || CodeOf(nil) != "" {
		t.Fatal("CodeOf")
	}
}

func TestToolResultReplacementNeedsAnOpenTurn(t *testing.T) {
	t.Parallel()
	l := newTestLog()
	s := newScript(t, l)
	s.toolTurn(1)
	node := l.Surface()[2]
	ev, _ := l.Event(node)
	tr, _ := Decode[ToolResult](ev)
	tr.Message.Content[0].Content = nil
	s.surface(TypeToolResult, tr, Replace(node, node), []int64{node}) // the log allows it
	err := CheckInvariants(l.Events(0, l.Len()))
	wantCode(t, err, CodeInvariant)
}
