package models

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

func TestAttachments(t *testing.T) {
	t.Parallel()
	forEachDB(t, func(t *testing.T, db *DB) {
		s := newTestStore(t, db, WriterOptions{})
		ctx := ctxTimeout(t, 10*time.Second)
		src := mustCreate(t, s, &Session{OwnerID: "alice"}).ID
		dst := mustCreate(t, s, &Session{OwnerID: "bob"}).ID
		// Every byte value, so a column that is text rather than binary
		// shows.
		data := make([]byte, 256*3)
		for i := range data {
			data[i] = byte(i)
		}
		mk := func(session, id string) *Attachment {
			return &Attachment{SessionID: session, ID: id, UploaderID: "alice", Name: "shot.png", MediaType: "image/png",
				Size: int64(len(data)), Width: 3, Height: 2, SHA256: "abc", Data: data}
		}
		for _, id := range []string{"a1", "a2"} {
			if err := s.CreateAttachment(ctx, mk(src, id)); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.CreateAttachment(ctx, mk(src, "a1")); !errors.Is(err, ErrExists) {
			t.Errorf("duplicate id = %v, want ErrExists", err)
		}
		if err := s.CreateAttachment(ctx, mk("no-such-session", "a3")); !errors.Is(err, ErrNotFound) {
			t.Errorf("attachment of a missing session = %v, want ErrNotFound", err)
		}

		got, err := s.AttachmentData(ctx, src, "a1")
		if err != nil || !bytes.Equal(got.Data, data) || got.MediaType != "image/png" || got.Width != 3 || got.Name != "shot.png" {
			t.Fatalf("data = %+v, %v", got, err)
		}
		meta, err := s.AttachmentMeta(ctx, src, "a1")
		if err != nil || meta.Data != nil || meta.Size != int64(len(data)) || meta.UploaderID != "alice" {
			t.Fatalf("meta = %+v, %v", meta, err)
		}
		if _, err := s.AttachmentMeta(ctx, dst, "a1"); !errors.Is(err, ErrNotFound) {
			t.Errorf("another session's attachment = %v, want ErrNotFound", err)
		}

		// A fork copies the ids its seed refers to; unknown ids are skipped
		// and a second copy changes nothing.
		for range 2 {
			if err := s.CopyAttachments(ctx, src, dst, []string{"a1", "missing"}); err != nil {
				t.Fatal(err)
			}
		}
		list, err := s.ListAttachments(ctx, dst)
		if err != nil || len(list) != 1 || list[0].ID != "a1" || list[0].Data != nil {
			t.Fatalf("copied = %+v, %v", list, err)
		}
		if got, err := s.AttachmentData(ctx, dst, "a1"); err != nil || !bytes.Equal(got.Data, data) {
			t.Fatalf("copied bytes: %v", err)
		}

		// Deleting a session deletes its attachments, not the copies.
		if err := s.DeleteSession(ctx, src); err != nil {
			t.Fatal(err)
		}
		if list, err := s.ListAttachments(ctx, src); err != nil || len(list) != 0 {
			t.Errorf("attachments of the deleted session = %d, %v", len(list), err)
		}
		if _, err := s.AttachmentMeta(ctx, dst, "a1"); err != nil {
			t.Errorf("the fork's copy: %v", err)
		}
	})
}
