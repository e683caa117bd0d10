package loki

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/grafana/loki/pkg/push"

	"github.com/winobs/winobs/contract"
	"github.com/winobs/winobs/endpoint"
	"github.com/winobs/winobs/internal/testkit/fixture"
)

// agent is the stream of the 12-of-13 capture as the agents send it.
const agent = `{channel="System", computer="WIN-NODE-3", job="windows-events", node="win-node-3"}`

// behind12 is the batch of the capture: 12 entries 3 h behind the stream's
// newest, then one that fits.
func behind12() []Stream {
	at := time.Date(2026, 12, 3, 13, 29, 42, 66618735, time.UTC)
	s := Stream{Labels: agent}
	for i := range 12 {
		s.Entries = append(s.Entries, Entry{Time: at.Add(time.Duration(i) * time.Second), Line: []byte(fmt.Sprint(`{"n":`, i, `}`))})
	}
	s.Entries = append(s.Entries, Entry{Time: time.Date(2026, 12, 3, 16, 0, 0, 0, time.UTC), Line: []byte(`{"fits":1}`)})
	return []Stream{s}
}

// A real Loki names ten of the twelve ignored entries and gives the total:
// all twelve are re-stamped (in their order, a nanosecond apart) and sent
// again; the one that fits, proven stored, is not sent again (it could be
// too far behind the entries stored with it, and Loki says so before it
// drops a duplicate); the report counts 13 stored, 12 of them re-stamped,
// and the oldest time the stream takes.
func TestTooFarBehindBeyondTheNamedTen(t *testing.T) {
	c, rec, dropped := setup(t, Config{}, status(400, string(fixture.Read(t, "loki", "400-too-far-behind-12-of-13.txt"))))
	now := time.Date(2026, 12, 3, 16, 29, 45, 0, time.UTC)
	c.now = func() time.Time { return now }
	if err := c.Send(context.Background(), behind12()); err != nil {
		t.Fatal(err)
	}
	if len(rec.requests) != 2 || len(dropped) != 0 {
		t.Fatalf("%d requests, dropped %v", len(rec.requests), dropped)
	}
	floor := time.Date(2026, 12, 3, 15, 29, 41, 0, time.UTC)
	resent := rec.requests[1].Streams[0].Entries
	for i, e := range resent[:12] {
		if want := floor.Add(BehindMargin + time.Duration(i)); !e.Timestamp.Equal(want) {
			t.Errorf("entry %d resent at %v, want %v", i, e.Timestamp, want)
		}
	}
	if len(resent) != 12 {
		t.Errorf("%d entries resent, want the 12 re-stamped ones", len(resent))
	}
	rep := c.last
	if rep.Stored[agent] != 13 || rep.Restamped[agent][contract.RestampTooFarBehind] != 12 || !rep.Floors[agent].Equal(floor) {
		t.Errorf("report %+v", rep)
	}
}

// What Loki says is checked against the batch before any entry is taken as
// stored: a total that does not match the batch, a named time the batch does
// not hold, or a sharded stream leaves the unnamed entries unconfirmed. The
// entries under the one floor Loki named are repaired (ignored or refused,
// none was stored), or only the named ones where the floor is a shard's;
// whatever a 204 does not confirm later is dropped, never counted as sent.
func TestTooFarBehindUnprovenAnswers(t *testing.T) {
	body := string(fixture.Read(t, "loki", "400-too-far-behind-12-of-13.txt"))
	now := time.Date(2026, 12, 3, 16, 29, 45, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		body   string
		marked int
	}{
		{"total over another count", strings.Replace(body, "out of 13", "out of 14", 1), 12},
		{"total higher than the oldest entries allow", strings.Replace(body, "total ignored: 12", "total ignored: 13", 1), 12},
		{"a named time the batch lacks", strings.Replace(body, "13:29:44.066618735", "13:29:44.5", 1), 12},
		{"a sharded stream", strings.Replace(body, `node="win-node-3", `, `node="win-node-3", __stream_shard__="1", `, 1), 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := judge(behind12()[0], tc.body, now)
			named := 0
			for _, m := range v.marks {
				if m.fault == behind {
					named++
				}
			}
			if v.proven || named != tc.marked || v.marks[12].fault != unnamed {
				t.Errorf("proven %v, %d entries marked (want %d), the one above the floor %v", v.proven, named, tc.marked, v.marks[12].fault)
			}
			// Loki keeps refusing: the batch ends dropped, none of it sent.
			c, _, dropped := setup(t, Config{}, status(400, tc.body), status(400, tc.body))
			c.now = func() time.Time { return now }
			c.Send(context.Background(), behind12())
			if c.last.Stored[agent] != 0 {
				t.Errorf("stored %v after refusals", c.last.Stored)
			}
			if sum := dropped[contract.DropTooFarBehind] + dropped[contract.DropUnconfirmed]; sum != 13 {
				t.Errorf("dropped %v, want all 13", dropped)
			}
		})
	}
}

// When every line is attributed and the ingester's answer is complete, the
// entries Loki did not name are stored even if the named ones cannot be
// repaired.
func TestGiveUpKeepsWhatTheAnswerProves(t *testing.T) {
	body := string(fixture.Read(t, "loki", "400-too-far-behind-12-of-13.txt"))
	now := time.Date(2026, 12, 3, 13, 0, 0, 0, time.UTC) // before every floor: a re-stamp cannot help
	v := judge(behind12()[0], body, now)
	if !v.proven {
		t.Fatal("the capture's answer accounts for every entry")
	}
	rep := newReport()
	v.giveUp(newWork(behind12()[0]), &rep)
	if rep.Stored[agent] != 1 || rep.Dropped[agent][contract.DropTooFarBehind] != 12 {
		t.Errorf("report %+v", rep)
	}
}

// A label Loki refuses (the capture: a 2,100-byte computer) drops that
// stream's entries with their reason; the other stream, in a request of its
// own, is confirmed by its 204.
func TestRefusedStream(t *testing.T) {
	long := `{channel="System", computer="` + strings.Repeat("W", 2100) + `", job="windows-events", node="win-node-4"}`
	refuse := func(pr *push.PushRequest) (int, string) {
		if pr.Streams[0].Labels == long {
			return 400, string(fixture.Read(t, "loki", "400-label-too-long.txt"))
		}
		return 204, ""
	}
	c, rec, dropped := setup(t, Config{}, refuse, refuse)
	c.Send(context.Background(), []Stream{
		{Labels: long, Entries: []Entry{{Time: time.Unix(1800000000, 0), Line: []byte("x")}}},
		{Labels: labels, Entries: []Entry{{Time: time.Unix(1800000000, 0), Line: []byte("y")}}},
	})
	if dropped[contract.DropStreamRefused] != 1 || c.last.Stored[labels] != 1 || len(rec.requests) != 2 || len(rec.requests[0].Streams) != 1 || len(rec.requests[1].Streams) != 1 {
		t.Errorf("dropped %v, stored %v, %d requests", dropped, c.last.Stored, len(rec.requests))
	}
}

// Reading an answer is linear in the answer and the batch: a 1 MiB body of
// too-old lines against a 5,000-entry batch.
func BenchmarkJudgeLargeBody(b *testing.B) {
	s := Stream{Labels: labels}
	var body strings.Builder
	base := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	for i := range 5000 {
		ts := base.Add(time.Duration(i) * time.Second)
		s.Entries = append(s.Entries, Entry{Time: ts, Line: []byte("x")})
		fmt.Fprintf(&body, "entry for stream '{channel=\"System\", job=\"windows-events\", service_name=\"windows-events\"}' has timestamp too old: %s, oldest acceptable timestamp is: 2026-11-26T07:26:19Z\n", ts.Format(time.RFC3339))
	}
	for body.Len() < 1<<20 {
		body.WriteString("entry for stream '{job=\"elsewhere\"}' has timestamp too old: 2026-11-19T00:00:00Z\n")
	}
	b.ResetTimer()
	for range b.N {
		v := judge(s, body.String(), base)
		if v.marks[4999].fault != tooOld {
			b.Fatal("not attributed")
		}
	}
}

var _ = endpoint.Loki{}

// An entry an earlier request may have stored (a replay after a restart, or
// a batch whose previous attempt got no answer or a 5xx) is never
// re-stamped when Loki says it is too far behind: Loki says so before it
// drops an identical entry, so it is presumed stored, counted among the
// stored and as presumed, and not sent again.
func TestMaybeStoredIsNeverRestamped(t *testing.T) {
	body := string(fixture.Read(t, "loki", "400-too-far-behind-12-of-13.txt"))
	now := time.Date(2026, 12, 3, 16, 29, 45, 0, time.UTC)
	replay := func() []Stream {
		s := behind12()
		for k := range s[0].Entries {
			s[0].Entries[k].MaybeStored = true
		}
		return s
	}
	for _, tc := range []struct {
		name    string
		answers []func(*push.PushRequest) (int, string)
		batch   []Stream
		sent    int // requests
	}{
		{"a replay", []func(*push.PushRequest) (int, string){status(400, body)}, replay(), 1},
		{"after a 503", []func(*push.PushRequest) (int, string){status(503, "ingester unavailable"), status(400, body)}, behind12(), 2},
		{"after no answer", []func(*push.PushRequest) (int, string){func(*push.PushRequest) (int, string) { return 0, "" }, status(400, body)}, behind12(), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, rec, dropped := setup(t, Config{}, tc.answers...)
			c.now = func() time.Time { return now }
			if err := c.Send(context.Background(), tc.batch); err != nil {
				t.Fatal(err)
			}
			rep := c.last
			if len(rec.requests) != tc.sent || len(dropped) != 0 || rep.Stored[agent] != 13 || rep.Presumed[agent] != 12 || len(rep.Restamped[agent]) != 0 {
				t.Errorf("%d requests, dropped %v, report %+v", len(rec.requests), dropped, rep)
			}
		})
	}
	// Maybe stored, but the stream's newest entry in Loki is not one of
	// them (another writer's, hours ahead: a backfill behind a live
	// stream): they were ignored, never stored, and are re-stamped.
	behindLive := replay()
	behindLive[0].Entries[12].MaybeStored = false // the new entry is not ours from before
	c0, _, _ := setup(t, Config{}, status(400, body))
	c0.now = func() time.Time { return now }
	c0.Send(context.Background(), behindLive)
	if rep := c0.last; rep.Presumed[agent] != 0 || rep.Restamped[agent][contract.RestampTooFarBehind] != 12 {
		t.Errorf("behind another writer's entry: report %+v", rep)
	}
	// Not in doubt (a 429 of the tenant's rate refuses the request whole,
	// as does a 401): re-stamped as before.
	c, rec, _ := setup(t, Config{}, status(401, "invalid credentials"), status(400, body))
	c.now = func() time.Time { return now }
	c.Send(context.Background(), behind12())
	if rep := c.last; len(rec.requests) != 3 || rep.Presumed[agent] != 0 || rep.Restamped[agent][contract.RestampTooFarBehind] != 12 {
		t.Errorf("after a 401: %d requests, report %+v", len(rec.requests), rep)
	}
}

// A node's channels share a stream (the channel is structured metadata): the
// capture's twelve ignored entries belong to two channels; each is
// re-stamped with its metadata kept, and the report counts each channel's
// entries under it, not under the stream.
func TestSharedStreamReportsEachOwner(t *testing.T) {
	c, rec, _ := setup(t, Config{}, status(400, string(fixture.Read(t, "loki", "400-too-far-behind-12-of-13.txt"))))
	now := time.Date(2026, 12, 3, 16, 29, 45, 0, time.UTC)
	c.now = func() time.Time { return now }
	streams := behind12()
	for i := range streams[0].Entries {
		owner := []string{"System", "Application"}[i%2]
		streams[0].Entries[i].Owner = owner
		streams[0].Entries[i].Metadata = []Label{{"channel", owner}}
	}
	if err := c.Send(context.Background(), streams); err != nil {
		t.Fatal(err)
	}
	if len(rec.requests) != 2 {
		t.Fatalf("%d requests", len(rec.requests))
	}
	for i, e := range rec.requests[1].Streams[0].Entries {
		if want := []string{"System", "Application"}[i%2]; len(e.StructuredMetadata) != 1 || e.StructuredMetadata[0].Value != want {
			t.Errorf("re-stamped entry %d resent with metadata %v, want channel %s", i, e.StructuredMetadata, want)
		}
	}
	rep := c.last
	for owner, want := range map[string][2]int{"System": {7, 6}, "Application": {6, 6}} {
		if rep.Stored[owner] != want[0] || rep.Restamped[owner][contract.RestampTooFarBehind] != want[1] {
			t.Errorf("%s: stored %d, re-stamped %d; want %d, %d", owner, rep.Stored[owner], rep.Restamped[owner][contract.RestampTooFarBehind], want[0], want[1])
		}
	}
	if rep.Stored[agent] != 0 || !rep.Floors[agent].Equal(time.Date(2026, 12, 3, 15, 29, 41, 0, time.UTC)) {
		t.Errorf("report %+v: entries by owner, the floor by stream", rep)
	}
}
