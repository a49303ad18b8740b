package client

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// FollowOptions tune Follow.
type FollowOptions struct {
	// MinBackoff and MaxBackoff bound the wait between reconnects
	// (defaults 100 ms and 5 s; jittered).
	MinBackoff, MaxBackoff time.Duration
	// OnReconnect, when set, is told about every reconnect and its cause.
	OnReconnect func(since int64, cause error)
	// RenderHTML asks for server-rendered HTML (Push.HTML).
	RenderHTML bool
	// EveryEvent subscribes without Batch, so handle sees every event as
	// stored. By default Follow subscribes with Batch (a follower that
	// falls behind gets the deltas it missed merged) and hands handle one
	// ChEvent push per event of each session/events push: a merged run of
	// deltas is one event with Event.From set, and the push's HTML comes
	// with its last event.
	EveryEvent bool
}

// Follow follows a session across connection losses: it dials, subscribes
// from since and hands every push to handle; when the connection ends
// (a slow-consumer cut, a server restart, the network) it dials again with
// backoff and resubscribes from the last event seq handled, so handle sees
// every session/event exactly once and in seq order (a merged run of
// deltas, Event.From..Event.Seq, counts once; see FollowOptions.EveryEvent). It returns when ctx
// ends (ctx's error), when handle fails (its error), or when the server
// refuses the subscription for good (not_found, forbidden, unauthorized).
func (c *Client) Follow(ctx context.Context, session string, since int64, handle func(Push) error, opts ...FollowOptions) error {
	var o FollowOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = 100 * time.Millisecond
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 5 * time.Second
	}
	last := since
	backoff := o.MinBackoff
	for {
		cause := c.followOnce(ctx, session, &last, handle, func() { backoff = o.MinBackoff }, o)
		var he *handlerError
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.As(cause, &he):
			return he.err
		case errTerminal(cause):
			return cause
		}
		if o.OnReconnect != nil {
			o.OnReconnect(last, cause)
		}
		wait := backoff/2 + rand.N(backoff/2+1)
		backoff = min(backoff*2, o.MaxBackoff)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}

type handlerError struct{ err error }

func (e *handlerError) Error() string { return e.err.Error() }

// followOnce runs one connection; it returns why it ended. handle runs on
// the connection's reader goroutine (no hand-over per push), and never
// after followOnce returned.
func (c *Client) followOnce(ctx context.Context, session string, last *int64, handle func(Push) error, connected func(), o FollowOptions) error {
	cn, err := c.Dial(ctx)
	if err != nil {
		return err
	}
	// Set by the reader goroutine; read once it ended (cn.done).
	var stop error
	defer func() {
		_ = cn.sock.CloseNow()
		<-cn.done
	}()
	_, err = cn.subscribe(ctx, session, *last, SubscribeOptions{RenderHTML: o.RenderHTML, Batch: !o.EveryEvent}, func(p Push) bool {
		stop = followPush(p, last, handle)
		return stop == nil
	})
	if err != nil {
		// The handler may have ended the connection during the replay.
		_ = cn.sock.CloseNow()
		<-cn.done
		if stop != nil {
			return stop
		}
		return err
	}
	connected()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-cn.done:
	}
	if stop != nil {
		return stop
	}
	if err := cn.Err(); err != nil {
		return err
	}
	return errors.New("connection closed")
}

// followPush hands one push to handle, events past last only; non-nil
// ends the connection: the handler's error (as *handlerError) or the
// session's close.
func followPush(p Push, last *int64, handle func(Push) error) error {
	if p.Ch == ChEvents {
		return unbatch(p, last, handle)
	}
	if p.Ch == ChEvent && p.Event != nil {
		if p.Event.Seq <= *last {
			return nil // already handled before a reconnect
		}
		*last = p.Event.Seq
	}
	if err := handle(p); err != nil {
		return &handlerError{err}
	}
	if p.Ch == ChClosed {
		return &Error{Code: "closed", Message: "session closed: " + p.Reason}
	}
	return nil
}

// unbatch hands each event of a session/events push to handle as a
// session/event push (the batch's html with the last), skipping those
// already handled.
func unbatch(p Push, last *int64, handle func(Push) error) error {
	for i := range p.Events {
		ev := &p.Events[i]
		if ev.Seq <= *last {
			continue
		}
		*last = ev.Seq
		one := Push{Ch: ChEvent, Session: p.Session, Event: ev, Raw: p.Raw}
		if i == len(p.Events)-1 {
			one.HTML = p.HTML
		}
		if err := handle(one); err != nil {
			return &handlerError{err}
		}
	}
	return nil
}
