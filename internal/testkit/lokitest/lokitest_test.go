package lokitest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/winobs/winobs/endpoint"
	"github.com/winobs/winobs/internal/testkit/fixture"
	"github.com/winobs/winobs/shipper/loki"
)

// post pushes streams once and returns Loki's answer.
func post(t *testing.T, r *Receiver, streams []loki.Stream) (int, string) {
	t.Helper()
	resp, err := http.Post(r.URL(), "application/x-protobuf", bytes.NewReader(loki.Body(streams)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

const demo = `{channel="System", job="demo"}`

// The receiver answers what the real Loki answered to the same pushes, byte
// for byte (testdata/loki holds the captured bodies).
func TestBodiesMatchTheRecording(t *testing.T) {
	at := func(s string) time.Time { t, _ := time.Parse(time.RFC3339Nano, s); return t }
	for _, tc := range []struct {
		file    string
		now     string
		streams []loki.Stream
	}{
		{"400-max-entry-size.txt", "2026-12-03T07:26:19Z", []loki.Stream{{Labels: demo, Entries: []loki.Entry{
			{Time: at("2026-12-03T07:26:00Z"), Line: bytes.Repeat([]byte("x"), 300008)}}}}},
		{"400-too-old.txt", "2026-12-03T07:26:19Z", []loki.Stream{{Labels: demo, Entries: []loki.Entry{
			{Time: at("2026-11-25T07:26:19.5Z"), Line: []byte("old")}}}}},
		// The stream's newest entry arrived in an earlier push (07:25:21).
		{"400-too-far-behind.txt", "2026-12-03T07:26:19Z", []loki.Stream{{Labels: demo, Entries: []loki.Entry{
			{Time: at("2026-12-03T05:26:19.899513623Z"), Line: []byte("behind")}}}}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			replay(t, at(tc.now), loki.Stream{Labels: demo, Entries: []loki.Entry{{Time: at("2026-12-03T07:25:21Z"), Line: []byte("newest")}}}, tc.streams, tc.file)
		})
	}
}

// The answers a real Loki 3.7.6 gave with the labels the agents set: past
// ten ignored entries the ingester gives only the total; a future entry and
// an over-long label value (the whole stream refused) come from the
// distributor.
func TestBodiesMatchTheRecordingWithAgentLabels(t *testing.T) {
	const agent = `{channel="System", computer="WIN-NODE-3", job="windows-events", node="win-node-3"}`
	at := func(s string) time.Time { t, _ := time.Parse(time.RFC3339Nano, s); return t }
	behind := []loki.Entry{}
	for i := range 12 {
		behind = append(behind, loki.Entry{Time: at("2026-12-03T13:29:42.066618735Z").Add(time.Duration(i) * time.Second), Line: []byte(fmt.Sprint("behind ", i))})
	}
	behind = append(behind, loki.Entry{Time: at("2026-12-03T16:00:00Z"), Line: []byte("fits")})
	long := `{channel="System", computer="` + strings.Repeat("W", 2100) + `", job="windows-events", node="win-node-4"}`
	for _, tc := range []struct {
		file    string
		streams []loki.Stream
		stored  []string
	}{
		{"400-too-far-behind-12-of-13.txt", []loki.Stream{{Labels: agent, Entries: behind}}, []string{"newest", "fits"}},
		{"400-too-new.txt", []loki.Stream{{Labels: agent, Entries: []loki.Entry{{Time: at("2200-01-01T00:00:00Z"), Line: []byte("future")}}}}, []string{"newest"}},
		{"400-label-too-long.txt", []loki.Stream{{Labels: long, Entries: []loki.Entry{{Time: at("2026-12-03T16:29:00Z"), Line: []byte("long label")}}}}, []string{"newest"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			r := replay(t, at("2026-12-03T16:29:45Z"), loki.Stream{Labels: agent, Entries: []loki.Entry{{Time: at("2026-12-03T16:29:41.5Z"), Line: []byte("newest")}}}, tc.streams, tc.file)
			if st := r.Stats(); st.Distinct != len(tc.stored) {
				t.Errorf("stored %d lines, want %v", st.Distinct, tc.stored)
			}
			for _, l := range tc.stored {
				if !r.Has(l) {
					t.Errorf("%q not stored", l)
				}
			}
		})
	}
}

// Loki's shard rule on a simulated clock: the first push of a stream is
// never sharded; then a push is sharded when the smoothed rate plus its own
// bytes (times the smoothed pushes per second, at most 1) passes 1536KB.
func TestShardRule(t *testing.T) {
	for _, tc := range []struct {
		name             string
		pushBytes        int
		every            time.Duration
		pushes           int
		wantFirstSharded int // index of the first sharded push, -1 for none
	}{
		// 1 MiB once a second scores 0.4+0.4, 0.64+0.64, then 0.78+0.78 MiB.
		{"1 MiB/s in 1 MiB pushes", 1 << 20, time.Second, 30, 3},
		{"512 KiB/s in 256 KiB pushes", 256 << 10, 500 * time.Millisecond, 120, -1},
		{"one huge first push", 8 << 20, time.Hour, 1, -1},
		{"2 MiB pushes every 10 s", 2 << 20, 10 * time.Second, 20, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
			l := Default()
			l.TenantRate = 0
			l.Now = func() time.Time { return now }
			r, err := NewWithLimits(l)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Stop()
			first := -1
			for i := range tc.pushes {
				// Lines of 64 KiB, so a sharded push can be split.
				var es []loki.Entry
				for j := range tc.pushBytes >> 16 {
					es = append(es, loki.Entry{Time: now.Add(time.Duration(j)), Line: []byte(fmt.Sprintf("%06d%04d%s", i, j, strings.Repeat("x", 1<<16-10)))})
				}
				before := r.Stats().Sharded
				if code, body := post(t, r, []loki.Stream{{Labels: `{job="a"}`, Entries: es}}); code != 204 {
					t.Fatalf("push %d: %d %s", i, code, body)
				}
				if r.Stats().Sharded > before && first < 0 {
					first = i
				}
				now = now.Add(tc.every)
			}
			if first != tc.wantFirstSharded {
				t.Errorf("first sharded push %d, want %d (peak score %.2f)", first, tc.wantFirstSharded, r.Stats().PeakShardScore)
			}
		})
	}
}

// replay pushes first, then streams, to a receiver whose clock stands at
// now, and holds its answer to the recorded body in testdata/loki/file.
func replay(t *testing.T, now time.Time, first loki.Stream, streams []loki.Stream, file string) *Receiver {
	t.Helper()
	l := Default()
	l.Now = func() time.Time { return now }
	r, err := NewWithLimits(l)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	if code, _ := post(t, r, []loki.Stream{first}); code != 204 {
		t.Fatalf("the first push: %d", code)
	}
	code, body := post(t, r, streams)
	if want := string(fixture.Read(t, "loki", file)); code != 400 || body != want {
		t.Errorf("answer %d:\n%q\nthe real Loki answered 400:\n%q", code, body, want)
	}
	return r
}

// Loki stores the valid entries of a partly rejected push, and drops an
// entry identical to one it holds.
func TestPartialStoreAndDedupe(t *testing.T) {
	r, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	now := time.Now()
	s := []loki.Stream{{Labels: `{job="a"}`, Entries: []loki.Entry{
		{Time: now, Line: []byte("one")},
		{Time: now, Line: []byte("one")},                          // identical: deduplicated
		{Time: now.Add(-8 * 24 * time.Hour), Line: []byte("old")}, // too old: rejected
	}}}
	if code, body := post(t, r, s); code != 400 || !strings.Contains(body, "has timestamp too old") {
		t.Errorf("answer %d %q", code, body)
	}
	post(t, r, s[:1]) // a replay of everything
	if st := r.Stats(); st.Distinct != 1 || st.Duplicates != 0 || !r.Has("one") || r.Has("old") {
		t.Errorf("stats %+v", st)
	}
}

// A stream pushed fast enough is split, and a replay of the same entries
// lands in another shard: visible duplicates, as measured on a real Loki.
// A slow stream's replay is deduplicated.
func TestShardingDefeatsDedupe(t *testing.T) {
	for _, tc := range []struct {
		name      string
		lineBytes int
		wantDupes bool
	}{{"slow stream", 1 << 10, false}, {"fast stream", 200 << 10, true}} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Now()
			l := Default()
			l.TenantRate = 0
			l.Now = func() time.Time { return now }
			r, err := NewWithLimits(l)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Stop()
			var last []loki.Entry
			for s := range 5 { // a push a second, 10 lines each
				last = nil
				for i := range 10 {
					last = append(last, loki.Entry{Time: now.Add(time.Duration(i) * time.Millisecond),
						Line: []byte(fmt.Sprintf("%d%04d%s", s, i, strings.Repeat("x", tc.lineBytes)))})
				}
				post(t, r, []loki.Stream{{Labels: `{job="a"}`, Entries: last}})
				now = now.Add(time.Second)
			}
			post(t, r, []loki.Stream{{Labels: `{job="a"}`, Entries: last[1:]}}) // a replay, shifted
			st := r.Stats()
			if (st.Duplicates > 0) != tc.wantDupes || st.Distinct != 50 {
				t.Errorf("stats %+v, want duplicates %v", st, tc.wantDupes)
			}
		})
	}
}

// Over the tenant's rate the whole push is a 429 and nothing is stored.
func TestTenantRateLimit(t *testing.T) {
	r, _ := New()
	defer r.Stop()
	big := loki.Entry{Time: time.Now(), Line: bytes.Repeat([]byte("x"), 200<<10)}
	var entries []loki.Entry
	for i := range 40 { // 8 MB, over the 6 MB burst
		e := big
		e.Time = e.Time.Add(time.Duration(i))
		entries = append(entries, e)
	}
	code, body := post(t, r, []loki.Stream{{Labels: `{job="a"}`, Entries: entries}})
	if code != 429 || !strings.Contains(body, "Ingestion rate limit exceeded for user fake") || r.Stats().Distinct != 0 {
		t.Errorf("answer %d %q, stats %+v", code, body, r.Stats())
	}
}

func TestFaults(t *testing.T) {
	r, _ := New()
	defer r.Stop()
	seq := []Fault{RateLimited, Unavailable, InternalError, Blocked, Reset, StoreThenReset, Accept}
	r.Set(Behaviour{Decide: func(n int) Fault { return seq[min(n, len(seq)-1)] }})
	c, _ := loki.NewClient(loki.Config{Loki: endpoint.Loki{URL: r.URL()}, MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond})
	now := time.Now()
	if _, err := c.Send(context.Background(), []loki.Stream{{Labels: `{job="a"}`, Entries: []loki.Entry{{Time: now, Line: []byte("x")}}}}); err != nil {
		t.Fatal(err)
	}
	if st := r.Stats(); st.Requests != 7 || st.Distinct != 1 || st.Duplicates != 0 || st.Received != 2 {
		t.Errorf("stats %+v", st)
	}
	r.Stop()
	done := make(chan error)
	go func() {
		_, err := c.Send(context.Background(), []loki.Stream{{Labels: `{job="a"}`, Entries: []loki.Entry{{Time: now.Add(time.Second), Line: []byte("y")}}}})
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil || !r.Has("y") {
		t.Errorf("after the receiver came back: %v, has y %v", err, r.Has("y"))
	}
}
