package loki

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/winobs/winobs/contract"
	"github.com/winobs/winobs/endpoint"
	"github.com/winobs/winobs/internal/testkit/fixture"
	"github.com/winobs/winobs/internal/testkit/lokiproc"
)

// Batches a real Loki (v3.7.6, default limits) refuses in part, sent by
// the client and then read back: every entry is stored exactly once, and
// the report counts what Loki holds, no more and no less. Measured on the
// client before it sent one stream a request in time order: "two streams
// behind a live writer" lost 150 of 300 (the 204 of the second round
// answered for the last stream only), "half behind" 75, "three streams,
// newest first" 54, and "half behind and one 8 days old" lost 65 while the
// report counted 250 dropped of the 235 Loki held.
func TestRepairIntoRealLoki(t *testing.T) {
	l := lokiproc.Start(t, lokiproc.Options{Tenants: true})
	// Every time within 2.5 h of now: a query does not show what this Loki
	// holds older than about 2 h 40 min before it flushes (measured: a
	// 204-answered push of 3 h read back without its oldest 20 minutes).
	now := time.Now().UTC().Truncate(time.Millisecond)
	ago := func(d time.Duration) func(int) time.Time {
		return func(i int) time.Time { return now.Add(-d + time.Duration(i)*time.Second) }
	}
	// Half of the entries 2 h behind, half 10 min: every other one, or
	// the old ones first.
	interleaved := func(i int) time.Time {
		if i%2 == 0 {
			return now.Add(-2*time.Hour + time.Duration(i)*time.Second)
		}
		return now.Add(-10*time.Minute + time.Duration(i)*time.Second)
	}
	oldFirst := func(i int) time.Time {
		if i < 75 {
			return now.Add(-2*time.Hour + time.Duration(i)*time.Second)
		}
		return now.Add(-10*time.Minute + time.Duration(i)*time.Second)
	}
	newestFirst := func(step time.Duration) func(int) time.Time {
		return func(i int) time.Time { return now.Add(-time.Duration(i) * step) }
	}
	for _, tc := range []struct {
		name string
		live []string // channels holding an entry at now before the batch
		// stored: the batch went once already and Loki stored it, unanswered
		// (a replay after a kill): sent again as maybe stored.
		stored    bool
		batch     func() []Stream
		wantPre   int // at least this many counted as presumed stored
		truncated int // lines Loki holds cut to its limit, with the marker
	}{
		{name: "two streams behind a live writer", live: []string{"A", "B"}, batch: func() []Stream {
			return []Stream{stream("A", 150, ago(2*time.Hour)), stream("B", 150, ago(2*time.Hour))}
		}},
		{name: "two streams half behind a live writer", live: []string{"A", "B"}, batch: func() []Stream {
			return []Stream{stream("A", 150, interleaved), stream("B", 150, oldFirst)}
		}},
		{name: "one stream newest first over 2 h", batch: func() []Stream {
			return []Stream{stream("A", 300, newestFirst(24*time.Second))}
		}},
		{name: "three streams newest first over 1.4 h", batch: func() []Stream {
			return []Stream{stream("A", 100, newestFirst(50*time.Second)), stream("B", 100, newestFirst(50*time.Second)), stream("C", 100, newestFirst(50*time.Second))}
		}},
		{name: "half behind a live writer and one 8 days old", live: []string{"A"}, batch: func() []Stream {
			s := stream("A", 300, oldFirst)
			s.Entries[0].Time = now.Add(-8 * 24 * time.Hour)
			return []Stream{s}
		}},
		{name: "out of time order, one 8 days old", batch: func() []Stream {
			// Sent as it comes, the 10-minute-old entries would raise the
			// floor above the last third after the first third was stored.
			s := stream("A", 150, func(i int) time.Time {
				switch {
				case i < 50:
					return now.Add(-2*time.Hour + time.Duration(i)*10*time.Second)
				case i < 100:
					return now.Add(-10*time.Minute + time.Duration(i)*time.Second)
				}
				return now.Add(-90*time.Minute + time.Duration(i)*time.Second)
			})
			s.Entries[0].Time = now.Add(-8 * 24 * time.Hour)
			return []Stream{s}
		}},
		{name: "three entries 8 days old in two seconds and a line over 256 KiB", batch: func() []Stream {
			// The distributor's refusals grouped on one line.
			s := stream("A", 100, ago(time.Hour))
			for k, d := range []time.Duration{0, time.Second, time.Second} {
				s.Entries[k].Time = now.Add(-8*24*time.Hour + d)
			}
			s.Entries[50].Line = append(s.Entries[50].Line, bytes.Repeat([]byte("x"), 300000)...)
			return []Stream{s}
		}, truncated: 1},
		{name: "a sparse batch over 2 h 20 min replayed after Loki stored it", stored: true, wantPre: 60, batch: func() []Stream {
			return []Stream{stream("A", 140, func(i int) time.Time { return now.Add(-140*time.Minute + time.Duration(i)*time.Minute) })}
		}},
		{name: "a replay behind a live writer that Loki never stored", live: []string{"A"}, batch: func() []Stream {
			s := stream("A", 150, ago(2*time.Hour))
			for k := range s.Entries {
				s.Entries[k].MaybeStored, s.Entries[k].StoredUpTo = true, s.Entries[len(s.Entries)-1].Time
			}
			return []Stream{s}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tenant := fmt.Sprintf("t%d", time.Now().UnixNano())
			c, err := NewClient(Config{Loki: endpoint.Loki{URL: l.URL + "/loki/api/v1/push", Tenant: tenant}, MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			for _, ch := range tc.live {
				rawPush(t, l, tenant, []Stream{{Labels: channelLabels(ch), Entries: []Entry{{Time: now, Line: []byte(`{"live":1}`)}}}})
			}
			batch := tc.batch()
			if tc.stored {
				rawPush(t, l, tenant, batch)
				for _, s := range batch {
					for k := range s.Entries {
						s.Entries[k].MaybeStored, s.Entries[k].StoredUpTo = true, s.Entries[len(s.Entries)-1].Time
					}
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), fixture.Patience)
			defer cancel()
			rep, err := c.Send(ctx, batch)
			if err != nil {
				t.Fatalf("not delivered within %v: %v", fixture.Patience, err)
			}
			held := readBack(t, l, tenant, now.Add(-9*24*time.Hour), now.Add(time.Hour))
			sent, stored, presumed, dropped, truncated := 0, 0, 0, 0, 0
			for _, s := range batch {
				sent += len(s.Entries)
				stored += rep.Stored[s.Labels]
				presumed += rep.Presumed[s.Labels] + rep.Held[s.Labels] // Loki answered it holds them, or refused them as such
				for _, n := range rep.Dropped[s.Labels] {
					dropped += n
				}
				for _, e := range s.Entries {
					line := string(e.Line)
					if len(line) > contract.LokiMaxLineBytes {
						line = string(Truncate(e.Line, contract.LokiMaxLineBytes))
						truncated++
					}
					if n := held[line]; n != 1 {
						t.Errorf("%s: Loki holds %d copies of %.80s", s.Labels, n, line)
					}
				}
			}
			if truncated != tc.truncated {
				t.Errorf("%d lines over Loki's limit, want %d", truncated, tc.truncated)
			}
			total := 0
			for _, n := range held {
				total += n
			}
			if total != sent || stored != sent || dropped != 0 || presumed < tc.wantPre {
				t.Errorf("sent %d, Loki holds %d; the report: %d stored (%d presumed, want at least %d), %d dropped %v", sent, total, stored, presumed, tc.wantPre, dropped, rep.Dropped)
			}
		})
	}
}

func channelLabels(ch string) string {
	return FormatLabels(map[string]string{"job": "windows-events", "channel": ch, "computer": "WIN-NODE-1"})
}

// stream is n entries of a channel, each line naming the channel and its
// number, timed by at.
func stream(ch string, n int, at func(int) time.Time) Stream {
	s := Stream{Labels: channelLabels(ch)}
	for i := range n {
		s.Entries = append(s.Entries, Entry{Time: at(i), Line: []byte(fmt.Sprintf(`{"channel":%q,"n":%d}`, ch, i))})
	}
	return s
}

// rawPush pushes streams as they are, in one request, expecting a 204.
func rawPush(t *testing.T, l *lokiproc.Loki, tenant string, streams []Stream) {
	t.Helper()
	if code, answer := l.Push(t, tenant, "application/x-protobuf", Body(streams)); code != http.StatusNoContent {
		t.Fatalf("push: %d %s", code, answer)
	}
}

// readBack counts the copies of every line the tenant's windows-events
// streams hold between from and to, the live writer's left out.
func readBack(t *testing.T, l *lokiproc.Loki, tenant string, from, to time.Time) map[string]int {
	t.Helper()
	held := map[string]int{}
	for _, line := range l.Lines(t, tenant, `{job="windows-events"} != "live"`, from, to) {
		held[line]++
	}
	return held
}
