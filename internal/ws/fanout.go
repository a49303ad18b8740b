package ws

import (
	"runtime"
	"sync"
)

// delivery is what one fan-out pass has for one connection, in order.
type delivery struct {
	c     *conn
	items []item
}

// fanShard is the fewest deliveries worth handing to another goroutine.
const fanShard = 64

// fanJob is a share of one fan-out, run by a fan worker.
type fanJob struct {
	part []delivery
	wg   *sync.WaitGroup
}

// deliver offers each delivery to its connection. Most of them are
// written on their sockets right here (sendQueue.offer), so a large
// fan-out is split over the fan workers, one share per core: one event
// to 1,000 viewers is 1,000 write system calls. Each connection has one
// delivery (one subscription per topic), so its items are offered in
// order by one goroutine; deliver returns when every share is done, so a
// topic's events keep their order.
func (h *Hub) deliver(ds []delivery) {
	shares := min(runtime.GOMAXPROCS(0), len(ds)/fanShard)
	if shares < 2 {
		offerAll(ds)
		return
	}
	per := (len(ds) + shares - 1) / shares
	var wg sync.WaitGroup
	for k := per; k < len(ds); k += per {
		job := fanJob{part: ds[k:min(k+per, len(ds))], wg: &wg}
		wg.Add(1)
		select {
		case h.fanJobs <- job:
		default: // every worker busy (other topics): this goroutine does it
			offerAll(job.part)
			wg.Done()
		}
	}
	offerAll(ds[:per])
	wg.Wait()
}

func offerAll(ds []delivery) {
	for _, d := range ds {
		d.c.offer(d.items...)
	}
}

// fanWorker runs shares of fan-outs until the hub closes.
func (h *Hub) fanWorker() {
	for {
		select {
		case job := <-h.fanJobs:
			offerAll(job.part)
			job.wg.Done()
		case <-h.base.Done():
			return
		}
	}
}
