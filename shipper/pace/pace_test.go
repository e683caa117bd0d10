package pace

import (
	"context"
	"testing"
	"time"
)

// Over a simulated minute of back-to-back sends, each key and the total stay
// at their rates: the waits add up to the bytes over the rate.
func TestRatesHold(t *testing.T) {
	clock := time.Unix(0, 0)
	p := New(1<<20, 3<<20)
	p.now = func() time.Time { return clock }
	sent := map[string]int{}
	for clock.Before(time.Unix(60, 0)) {
		batch := map[string]int{"a": 512 << 10, "b": 512 << 10, "c": 256 << 10, "d": 256 << 10, "e": 256 << 10}
		clock = clock.Add(p.Reserve(batch))
		for k, n := range batch {
			sent[k] += n
		}
	}
	elapsed := clock.Sub(time.Unix(0, 0)).Seconds()
	total := 0
	for k, n := range sent {
		total += n
		if rate := float64(n) / elapsed; rate > 1.05*(1<<20) {
			t.Errorf("key %s at %.0f B/s, over 1 MiB/s", k, rate)
		}
	}
	if rate := float64(total) / elapsed; rate > 1.05*(3<<20) || rate < 0.9*(3<<20) {
		t.Errorf("total at %.0f B/s, want about 3 MiB/s", rate)
	}
}

// One key alone is held to its own rate; a first send never waits.
func TestPerKey(t *testing.T) {
	clock := time.Unix(0, 0)
	p := New(1000, 0)
	p.now = func() time.Time { return clock }
	if d := p.Reserve(map[string]int{"a": 500}); d != 0 {
		t.Errorf("first send waits %v", d)
	}
	if d := p.Reserve(map[string]int{"a": 500}); d != 500*time.Millisecond {
		t.Errorf("second send waits %v, want 500ms", d)
	}
	if d := p.Reserve(map[string]int{"b": 500}); d != 0 {
		t.Errorf("another key waits %v", d)
	}
	if d := New(0, 0).Reserve(map[string]int{"a": 1 << 30}); d != 0 {
		t.Errorf("unlimited waits %v", d)
	}
}

func TestWaitHonoursContext(t *testing.T) {
	p := New(1, 0)
	p.Reserve(map[string]int{"a": 3600})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := p.Wait(ctx, map[string]int{"a": 1}); err == nil {
		t.Error("Wait outlived its context")
	}
}
