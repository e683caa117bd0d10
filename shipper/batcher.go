package shipper

import "time"

// batcher formats records into batches of at most maxBytes of lines (a
// batch is flushed before the entry that would take it over, so only a
// single entry can be larger) or of the XML they came from, flushed at the
// latest maxWait after their first record. Loki's shard rule counts each
// push's bytes, so the bound is what keeps a stream unsharded. It hands on one batch at a time: while the pusher is busy it stops
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
			p := bt.format.prepare(r)
			if b.events > 0 && b.bytes+len(p.e.Line) > bt.maxBytes {
				flush()
				timer.Reset(bt.maxWait)
			}
			bt.format.commit(b, p)
			if b.bytes >= bt.maxBytes || b.charge >= int64(bt.maxBytes) {
				flush()
			}
		case <-timer.C:
			flush()
		}
	}
}
