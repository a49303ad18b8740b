package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"harness/client"
)

// Example starts a session, subscribes, sends a prompt and prints the
// answer as it streams. (Compiled, not run: it needs a server.)
func Example() {
	ctx := context.Background()
	c := client.New("http://127.0.0.1:8080", client.WithToken(os.Getenv("HARNESS_TOKEN")))
	sess, err := c.CreateSession(ctx, client.NewSession{Title: "demo"})
	if err != nil {
		fmt.Println(err)
		return
	}
	conn, err := c.Dial(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close()
	sub, err := conn.Subscribe(ctx, sess.ID, -1)
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := conn.Followup(ctx, sess.ID, "long: 20"); err != nil {
		fmt.Println(err)
		return
	}
	for p := range sub.C {
		if p.Ch != client.ChEvent {
			continue
		}
		switch p.Event.Type {
		case "assistant/chunk":
			var d struct {
				Chunk struct{ Type, Text string } `json:"chunk"`
			}
			_ = json.Unmarshal(p.Event.Data, &d)
			if d.Chunk.Type == "text-delta" {
				fmt.Print(d.Chunk.Text)
			}
		case "turn/end":
			return
		}
	}
}

// ExampleClient_Follow follows a session across disconnects (including a
// slow-consumer cut), seeing every event exactly once.
func ExampleClient_Follow() {
	ctx := context.Background()
	c := client.New("http://127.0.0.1:8080", client.WithToken(os.Getenv("HARNESS_TOKEN")))
	err := c.Follow(ctx, os.Getenv("HARNESS_SESSION"), -1, func(p client.Push) error {
		if p.Ch == client.ChEvent {
			fmt.Println(p.Event.Seq, p.Event.Type)
		}
		return nil
	})
	fmt.Println(err)
}
