// Package client is the Go client of the Harness server: every REST route
// (sessions, events, messages, approvals, questions, queue, compaction,
// fork, export, members, share links, providers) and the WebSocket
// protocol at /ws
// (docs/protocol.md), with request/response correlation, per-session push
// channels and a reconnect-with-since helper (Follow). Tests, the load tool
// and scripts use it.
//
// Authenticate with an API token (WithToken), a login cookie and its CSRF
// token (WithCookie), or, for the read-only socket of a share link,
// WithShareToken.
//
// Example: start a session, subscribe, send a prompt and print the answer
// as it streams.
//
//	c := client.New("http://127.0.0.1:8080", client.WithToken(os.Getenv("HARNESS_TOKEN")))
//	sess, err := c.CreateSession(ctx, client.NewSession{Title: "demo"})
//	if err != nil {
//		return err
//	}
//	conn, err := c.Dial(ctx)
//	if err != nil {
//		return err
//	}
//	defer conn.Close()
//	sub, err := conn.Subscribe(ctx, sess.ID, -1)
//	if err != nil {
//		return err
//	}
//	if _, err := conn.Followup(ctx, sess.ID, "long: 20"); err != nil {
//		return err
//	}
//	for p := range sub.C {
//		if p.Ch != client.ChEvent {
//			continue
//		}
//		switch p.Event.Type {
//		case "assistant/chunk":
//			var d struct {
//				Chunk struct{ Type, Text string } `json:"chunk"`
//			}
//			_ = json.Unmarshal(p.Event.Data, &d)
//			if d.Chunk.Type == "text-delta" {
//				fmt.Print(d.Chunk.Text)
//			}
//		case "turn/end":
//			return nil
//		}
//	}
//	return conn.Err()
//
// With SubscribeOptions.Batch the events come in ChEvents pushes
// (Push.Events): the replay in pages, and live the events that queued up
// behind a slow reader in one push, each run of text or reasoning deltas of
// a block merged into one event (Event.From is its first seq).
//
// A subscriber that must not miss anything across disconnects (including a
// slow-consumer cut, close code 4008) uses Follow, which subscribes with
// Batch (FollowOptions.EveryEvent turns it off), hands each event to its
// handler as one ChEvent push and resubscribes with since = the last event
// seq it handled:
//
//	err := c.Follow(ctx, sess.ID, -1, func(p client.Push) error {
//		if p.Ch == client.ChEvent {
//			fmt.Println(p.Event.Seq, p.Event.Type)
//		}
//		return nil
//	})
package client
