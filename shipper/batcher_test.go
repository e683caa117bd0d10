package shipper

import (
	"testing"
	"time"

	"github.com/winobs/winobs/internal/testkit/fixture"
	"github.com/winobs/winobs/shipper/state"
)

// The batcher alone. Skipped records (no XML) carry only a position and a
// budget charge, which is all batching looks at.

func skipped(offset, size int64) record {
	return record{channel: "System", drop: "too_large", size: size, cp: state.Checkpoint{Channel: "System", Offset: offset}}
}

func startBatcher(t *testing.T, maxBytes int, maxWait time.Duration, out chan *batch) chan<- record {
	t.Helper()
	in := make(chan record)
	bt := &batcher{format: testFormatter(t, nil), maxBytes: maxBytes, maxWait: maxWait}
	go bt.run(in, out)
	return in
}

func TestBatcherFlushesAtMaxBytes(t *testing.T) {
	out := make(chan *batch, 4)
	in := startBatcher(t, 250, time.Hour, out)
	for i := range int64(4) {
		in <- skipped(i+1, 100)
	}
	b := <-out
	if b.charge != 300 || b.positions["System"].Offset != 3 {
		t.Errorf("first batch: charge %d, position %d; want 300 and the third record", b.charge, b.positions["System"].Offset)
	}
	close(in)
	if b := <-out; b.charge != 100 || b.positions["System"].Offset != 4 {
		t.Errorf("last batch on close: charge %d, position %d", b.charge, b.positions["System"].Offset)
	}
	if _, open := <-out; open {
		t.Error("out not closed after the records")
	}
}

func TestBatcherFlushesAtMaxWait(t *testing.T) {
	out := make(chan *batch, 1)
	in := startBatcher(t, 1<<20, 20*time.Millisecond, out)
	in <- skipped(1, 10)
	select {
	case b := <-out:
		if b.positions["System"].Offset != 1 {
			t.Errorf("position %d", b.positions["System"].Offset)
		}
	case <-time.After(fixture.Patience):
		t.Fatal("a lone record was not flushed after maxWait")
	}
	close(in)
}

// Back-pressure: while the batch it flushed is not taken, the batcher takes
// no further record (and so the sources wait on the budget).
func TestBatcherHoldsBackWhileThePusherIsBusy(t *testing.T) {
	out := make(chan *batch) // the pusher is busy: nobody receives
	in := startBatcher(t, 1, time.Hour, out)
	in <- skipped(1, 10) // flushed at once: the batcher now waits on out
	select {
	case in <- skipped(2, 10):
		t.Fatal("the batcher took a record while its flushed batch was not taken")
	case <-time.After(100 * time.Millisecond):
	}
	if b := <-out; b.positions["System"].Offset != 1 {
		t.Errorf("position %d", b.positions["System"].Offset)
	}
	select {
	case in <- skipped(2, 10):
	case <-time.After(fixture.Patience):
		t.Fatal("the batcher did not resume once its batch was taken")
	}
	if b := <-out; b.positions["System"].Offset != 2 {
		t.Errorf("position %d", b.positions["System"].Offset)
	}
	close(in)
}
