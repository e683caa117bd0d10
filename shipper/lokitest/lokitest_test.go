package lokitest

import (
	"context"
	"testing"
	"time"

	"github.com/winobs/winobs/shipper/loki"
)

func TestDedupeAndPartialRejects(t *testing.T) {
	r, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	r.Set(Behaviour{RejectBefore: time.Unix(1000, 0)})
	c, _ := loki.NewClient(loki.Config{URL: r.URL(), MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond})
	s := []loki.Stream{{Labels: `{job="a"}`, Entries: []loki.Entry{
		{Time: time.Unix(2000, 5), Line: []byte("one")},
		{Time: time.Unix(2000, 5), Line: []byte("one")}, // identical: deduplicated
		{Time: time.Unix(10, 0), Line: []byte("old")},   // too old: resent at reading time
	}}}
	if err := c.Send(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	c.Send(context.Background(), s[:1]) // a replay of everything
	st := r.Stats()
	if st.Distinct != 2 || !r.Has("one") || !r.Has("old") {
		t.Errorf("stats %+v", st)
	}
	// "old" was stored once at reading time, then the replay of the batch
	// resends it as too old again and stores it at another reading time:
	// the only way a repeat becomes visible.
	if st.Duplicates != 1 {
		t.Errorf("duplicates %d, want 1 (the re-timestamped line replayed)", st.Duplicates)
	}
}

func TestFaults(t *testing.T) {
	r, _ := New()
	defer r.Stop()
	seq := []Fault{RateLimited, Unavailable, InternalError, Blocked, Reset, StoreThenReset, Accept}
	r.Set(Behaviour{Decide: func(n int) Fault { return seq[min(n, len(seq)-1)] }})
	c, _ := loki.NewClient(loki.Config{URL: r.URL(), MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond})
	if err := c.Send(context.Background(), []loki.Stream{{Labels: `{job="a"}`, Entries: []loki.Entry{{Time: time.Unix(2000, 0), Line: []byte("x")}}}}); err != nil {
		t.Fatal(err)
	}
	if st := r.Stats(); st.Requests != 7 || st.Distinct != 1 || st.Duplicates != 0 || st.Received != 2 {
		t.Errorf("stats %+v", st)
	}
	r.Stop()
	done := make(chan error)
	go func() {
		done <- c.Send(context.Background(), []loki.Stream{{Labels: `{job="a"}`, Entries: []loki.Entry{{Time: time.Unix(3000, 0), Line: []byte("y")}}}})
	}()
	time.Sleep(50 * time.Millisecond)
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil || !r.Has("y") {
		t.Errorf("after the receiver came back: %v, has y %v", err, r.Has("y"))
	}
}
