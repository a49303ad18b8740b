package ws

import (
	"runtime"
	"sync"
)

// delivery is one item for one connection.
type delivery struct {
	c  *conn
	it item
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
// to 1,000 viewers is 1,000 write system calls. A connection's
// deliveries are contiguous in ds (one subscription per topic) and stay
// in one share; deliver returns when every share is done, so a topic's
// events keep their order.
func (h *Hub) deliver(ds []delivery) {
	shares := min(runtime.GOMAXPROCS(0), len(ds)/fanShard)
	if shares < 2 {
		offerAll(ds)
		return
	}
	per := (len(ds) + shares - 1) / shares
	var wg sync.WaitGroup
	first := shareEnd(ds, per)
	for k := first; k < len(ds); {
		end := shareEnd(ds, k+per)
		job := fanJob{part: ds[k:end], wg: &wg}
		k = end
		wg.Add(1)
		select {
		case h.fanJobs <- job:
		default: // every worker busy (other topics): this goroutine does it
			offerAll(job.part)
			wg.Done()
		}
	}
	offerAll(ds[:first])
	wg.Wait()
}

// shareEnd is where a share ending near end may end: never between two
// deliveries to one connection (a plain subscriber gets one per event),
// which must be offered in order by one goroutine.
func shareEnd(ds []delivery, end int) int {
	end = min(end, len(ds))
	for end < len(ds) && ds[end].c == ds[end-1].c {
		end++
	}
	return end
}

func offerAll(ds []delivery) {
	for _, d := range ds {
		d.c.offer(d.it)
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
