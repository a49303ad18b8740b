package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"harness/client"
	"harness/internal/llm/fake"
)

// run drives the load and prints the report.
func run(ctx context.Context, o options) error {
	if o.sessions < 1 || o.viewers < 1 {
		return errors.New("need at least one session and one viewer")
	}
	var r report
	r.Config = reportConfig{Sessions: o.sessions, Viewers: o.viewers, Rate: o.rate, Chunks: o.chunks,
		Turns: o.turns, Duration: o.duration.String(), Prompt: o.prompt, HTML: o.html, Batch: o.batch, Raw: o.raw}
	targets, token := splitTargets(o.target), o.token
	if o.killOwner > 0 && (len(targets) > 0 || o.replicas < 2) {
		return errors.New("-kill-owner needs spawned replicas (-replicas 2 or more, -db-dsn)")
	}
	stamped := false
	var owner *spawned
	if len(targets) == 0 {
		srvs, stop, err := spawnReplicas(ctx, o)
		if err != nil {
			return err
		}
		defer stop()
		for _, srv := range srvs {
			targets = append(targets, srv.url)
		}
		token, stamped = srvs[0].token, true
		r.ColdStartMs = ms(srvs[0].ready)
		owner = srvs[0]
	}
	// pick is the replica of the k-th viewer or sender: any, or one that
	// survives the owner's kill.
	pick := func(k int) int { return k % len(targets) }
	if o.killOwner > 0 {
		pick = func(k int) int { return 1 + k%(len(targets)-1) }
	}
	base := targets[0]
	if o.killOwner > 0 {
		base = targets[1] // the server figures are one survivor's
	}
	r.Target = strings.Join(targets, ",")
	clients := make([]*client.Client, len(targets))
	for i, t := range targets {
		clients[i] = client.New(t, client.WithToken(token))
	}
	// Sessions are created through the first target, which owns them.
	c := clients[0]
	if m, err := scrape(ctx, base); err == nil {
		r.IdleRSSMiB = m["process_resident_memory_bytes"] / (1 << 20)
	}

	ids := make([]string, o.sessions)
	for i := range ids {
		s, err := c.CreateSession(ctx, client.NewSession{Title: fmt.Sprintf("load %d", i)})
		if err != nil {
			return fmt.Errorf("create session: %w", err)
		}
		ids[i] = s.ID
	}

	// Viewers: every one its own socket, like browser tabs. They follow
	// with reconnects: a viewer cut for falling behind resumes with since,
	// as a browser does, and the cut is counted.
	perTarget := make([]latencies, len(targets))
	var (
		lat       latencies
		delivered atomic.Int64
		cuts      atomic.Int64
		errs      errorLog
		viewersWG sync.WaitGroup
		ready     sync.WaitGroup
	)
	vctx, stopViewers := context.WithCancel(ctx)
	defer stopViewers()
	turnEnds := make([]chan struct{}, o.sessions)
	for i, id := range ids {
		turnEnds[i] = make(chan struct{}, 16)
		for v := range o.viewers {
			var ends chan struct{}
			if v == 0 {
				ends = turnEnds[i]
			}
			ready.Add(1)
			target := pick(i + v) // viewers spread over the replicas
			viewersWG.Go(func() {
				var once sync.Once
				if o.raw {
					samples := rawViewer(vctx, targets[target], token, id, o.batch, o.html, func() { once.Do(ready.Done) }, ends, &delivered, &cuts, &errs)
					lat.add(samples)
					perTarget[target].add(samples)
					return
				}
				var samples []time.Duration
				err := clients[target].Follow(vctx, id, -1, func(p client.Push) error {
					if p.Ch == client.ChReplayDone {
						once.Do(ready.Done)
					}
					samples = observe(p, stamped, &delivered, ends, samples)
					return nil
				}, client.FollowOptions{RenderHTML: o.html, EveryEvent: !o.batch, OnReconnect: func(_ int64, cause error) {
					if client.IsSlowConsumer(cause) {
						cuts.Add(1)
					}
				}})
				once.Do(ready.Done)
				if err != nil && vctx.Err() == nil {
					errs.add(fmt.Errorf("viewer of %s: %w", id, err))
				}
				lat.add(samples)
				perTarget[target].add(samples)
			})
		}
	}
	ready.Wait()

	before, _ := scrape(ctx, base)
	sampler := startSampler(ctx, base)
	clientCPU0 := selfCPU()
	start := time.Now()
	deadline := start.Add(o.duration)
	var turns, refusals atomic.Int64
	var drivers sync.WaitGroup
	killed := make(chan takeoverFigures, 1)
	if o.killOwner > 0 {
		go func() {
			f, err := killOwner(ctx, owner, o.dbDSN, "loadgen-0", ids, o.killOwner)
			if err != nil {
				errs.add(err)
			}
			killed <- f
		}()
	}
	for i, id := range ids {
		drivers.Go(func() {
			for n := 0; o.turns == 0 || n < o.turns; n++ {
				if o.turns == 0 && time.Now().After(deadline) {
					return
				}
				// Through target i mod N: forwarded to the owner.
				if err := send(ctx, clients[pick(i)], id, o.prompt, o.killOwner > 0, &refusals); err != nil {
					errs.add(err)
					return
				}
				select {
				case <-turnEnds[i]:
					turns.Add(1)
				case <-time.After(max(2*o.duration, time.Minute)):
					errs.add(fmt.Errorf("session %s: turn did not end", id))
					return
				case <-ctx.Done():
					return
				}
			}
		})
	}
	drivers.Wait()
	elapsed := time.Since(start)
	if o.killOwner > 0 {
		f := <-killed
		f.Refusals = int(refusals.Load())
		r.Takeover = &f
		c = clients[len(clients)-1] // the replay reads a survivor
	}
	r.ClientCPUCores = (selfCPU() - clientCPU0).Seconds() / elapsed.Seconds()
	peakRSS, cpu := sampler.stop()
	after, _ := scrape(ctx, base)

	// Let the viewers drain the tail, then stop them.
	time.Sleep(200 * time.Millisecond)
	stopViewers()
	viewersWG.Wait()
	r.Cuts = int(cuts.Load())

	r.Turns = int(turns.Load())
	r.ElapsedSec = elapsed.Seconds()
	r.EventsDelivered = delivered.Load()
	r.DeliveredPerSec = float64(r.EventsDelivered) / elapsed.Seconds()
	if before != nil && after != nil {
		r.EventsPersisted = int64(after["harness_events_appended_total"] - before["harness_events_appended_total"])
		r.PersistedPerSec = float64(r.EventsPersisted) / elapsed.Seconds()
		r.ServerCPUCores = (after["process_cpu_seconds_total"] - before["process_cpu_seconds_total"]) / elapsed.Seconds()
		r.ServerCutsTotal = int(after["harness_ws_send_queue_cuts_total"])
		r.ServerFrames = int64(after["harness_ws_frames_written_total"] - before["harness_ws_frames_written_total"])
		r.ServerWrites = int64(after["harness_ws_writes_total"] - before["harness_ws_writes_total"])
		if r.ServerFrames > 0 {
			r.ServerCPUMicrosPerFrame = 1e6 * r.ServerCPUCores * elapsed.Seconds() / float64(r.ServerFrames)
		}
	}
	if r.ServerCPUCores > 0 {
		r.ServerCPUMilliPerViewer = 1000 * r.ServerCPUCores / float64(o.sessions*o.viewers)
	}
	r.ServerPeakRSSMiB = peakRSS / (1 << 20)
	if cpu > 0 && r.ServerCPUCores == 0 {
		r.ServerCPUCores = cpu
	}
	r.Latency = lat.summary(stamped)
	if len(targets) > 1 {
		for i := range targets {
			r.PerTarget = append(r.PerTarget, targetFigures{URL: targets[i], Owner: i == 0, Latency: perTarget[i].summary(stamped)})
		}
	}
	r.Errors, r.ErrorSamples = errs.summary()

	if o.replay {
		if err := measureReplay(ctx, c, ids, o.batch, &r); err != nil {
			r.Errors++
			r.ErrorSamples = append(r.ErrorSamples, err.Error())
		}
	}
	return r.print(o.json)
}

// send sends one message; with retry, a refusal is counted and the same
// message sent again under the same key (stored once) for up to a minute.
func send(ctx context.Context, c *client.Client, id, prompt string, retry bool, refusals *atomic.Int64) error {
	if !retry {
		_, err := c.SendMessage(ctx, id, prompt, "followup")
		return err
	}
	key := client.NewKey()
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := c.SendMessageKey(ctx, id, prompt, "followup", key)
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		refusals.Add(1)
		time.Sleep(200 * time.Millisecond)
	}
}

// observe handles one viewer push: it counts events, collects chunk
// latencies and tells ends about turn ends.
func observe(p client.Push, stamped bool, delivered *atomic.Int64, ends chan struct{}, out []time.Duration) []time.Duration {
	if p.Ch != client.ChEvent || p.Event == nil {
		return out
	}
	delivered.Add(1)
	switch p.Event.Type {
	case "assistant/chunk":
		now := time.Now()
		if stamped {
			if at, ok := fake.ParseTick(p.Event.Data); ok {
				out = append(out, now.Sub(at))
			}
		} else if strings.Contains(string(p.Event.Data), `"text-delta"`) || strings.Contains(string(p.Event.Data), `"reasoning-delta"`) {
			out = append(out, now.Sub(time.UnixMilli(p.Event.Time)))
		}
	case "turn/end":
		if ends != nil {
			select {
			case ends <- struct{}{}:
			default:
			}
		}
	}
	return out
}

// measureReplay times a fresh subscriber replaying the largest session, a
// reconnect that resumes from the middle of it, and the REST export of the
// same events (pages of 5,000), from this process.
func measureReplay(ctx context.Context, c *client.Client, ids []string, batch bool, r *report) error {
	var big string
	var head int64 = -1
	for _, id := range ids {
		s, err := c.GetSession(ctx, id)
		if err != nil {
			return err
		}
		if s.Head > head {
			big, head = id, s.Head
		}
	}
	timeReplay := func(since int64) (int, time.Duration, error) {
		cn, err := c.Dial(ctx)
		if err != nil {
			return 0, 0, err
		}
		defer cn.Close()
		start := time.Now()
		sub, err := cn.Subscribe(ctx, big, since, client.SubscribeOptions{Buffer: 4096, Batch: batch})
		if err != nil {
			return 0, 0, err
		}
		n := 0
		for p := range sub.C {
			switch p.Ch {
			case client.ChEvent:
				n++
			case client.ChEvents:
				n += len(p.Events)
			case client.ChReplayDone:
				return n, time.Since(start), nil
			}
		}
		return n, 0, fmt.Errorf("replay ended early: %v", cn.Err())
	}
	n, took, err := timeReplay(-1)
	if err != nil {
		return err
	}
	r.Replay = replayFigures{Events: n, Ms: ms(took)}
	n, took, err = timeReplay(head / 2)
	if err != nil {
		return err
	}
	r.Reconnect = replayFigures{Events: n, Ms: ms(took)}

	start := time.Now()
	n, since := 0, int64(-1)
	for {
		p, err := c.Events(ctx, big, since, 5000)
		if err != nil {
			return err
		}
		n += len(p.Events)
		if len(p.Events) == 0 || p.Events[len(p.Events)-1].Seq >= p.Head {
			break
		}
		since = p.Events[len(p.Events)-1].Seq
	}
	r.Export = replayFigures{Events: n, Ms: ms(time.Since(start))}
	if r.Export.Ms > 0 {
		r.ReplayVsExport = r.Replay.Ms / r.Export.Ms
	}
	return nil
}

// latencies collects samples from many viewers.
type latencies struct {
	mu  sync.Mutex
	all []time.Duration
}

func (l *latencies) add(d []time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, d...)
}

func (l *latencies) summary(stamped bool) latencyFigures {
	l.mu.Lock()
	defer l.mu.Unlock()
	slices.Sort(l.all)
	pct := func(p float64) float64 {
		if len(l.all) == 0 {
			return 0
		}
		return ms(l.all[min(len(l.all)-1, int(float64(len(l.all))*p))])
	}
	source := "event time (ms resolution)"
	if stamped {
		source = "provider stamp"
	}
	return latencyFigures{Samples: len(l.all), P50: pct(.5), P95: pct(.95), P99: pct(.99), Max: pct(1), Source: source}
}

type errorLog struct {
	mu      sync.Mutex
	n       int
	samples []string
}

func (e *errorLog) add(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.n++
	if len(e.samples) < 5 {
		e.samples = append(e.samples, err.Error())
	}
}

func (e *errorLog) summary() (int, []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.n, e.samples
}

// scrape reads the server's /metrics (loopback or admin token) into a map of
// unlabelled series and label-summed families.
func scrape(ctx context.Context, base string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("metrics: %s", res.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		if sp < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[sp+1:], 64)
		if err != nil {
			continue
		}
		name := line[:sp]
		if i := strings.IndexByte(name, '{'); i >= 0 {
			name = name[:i]
		}
		out[name] += v
	}
	return out, sc.Err()
}

// sampler polls the server's RSS during the run.
type sampler struct {
	stopCh chan struct{}
	done   chan struct{}
	peak   float64
	cpu    float64
}

func startSampler(ctx context.Context, base string) *sampler {
	s := &sampler{stopCh: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			if m, err := scrape(ctx, base); err == nil {
				s.peak = max(s.peak, m["process_resident_memory_bytes"])
			}
			select {
			case <-s.stopCh:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *sampler) stop() (peakRSS, cpu float64) {
	close(s.stopCh)
	<-s.done
	return s.peak, s.cpu
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// selfCPU is the CPU time this process used so far (the viewers' side of
// the load when they share the server's machine).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// splitTargets reads -target: one URL or several, comma-separated.
func splitTargets(s string) []string {
	var out []string
	for _, t := range strings.Split(s, ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, strings.TrimSuffix(t, "/"))
		}
	}
	return out
}
