package shipper

import "time"

// batcher formats records into batches of at most maxBytes (of lines, or of
// the XML they came from), flushed at the latest maxWait after their first
// record. It hands on one batch at a time: while the pusher is busy it stops
// taking records, the sources then wait on the in-flight budget, and a slow
// Loki holds reading back instead of memory growing.
type batcher struct {
	format   *formatter
	maxBytes int
	maxWait  time.Duration
}

// run batches records until they are closed, then flushes and closes out.
func (bt *batcher) run(records <-chan record, out chan<- *batch) {
	defer close(out)
	timer := time.NewTimer(bt.maxWait)
	timer.Stop()
	b := newBatch()
	flush := func() {
		if len(b.positions) > 0 {
			out <- b
			b = newBatch()
		}
		timer.Stop()
	}
	for {
		select {
		case r, ok := <-records:
			if !ok {
				flush()
				return
			}
			if len(b.positions) == 0 {
				timer.Reset(bt.maxWait)
			}
			bt.format.add(b, r)
			if b.bytes >= bt.maxBytes || b.charge >= int64(bt.maxBytes) {
				flush()
			}
		case <-timer.C:
			flush()
		}
	}
}
