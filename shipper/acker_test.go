package shipper

import (
	"bytes"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/winobs/winobs/shipper/loki"
	"github.com/winobs/winobs/shipper/shipconfig"
	"github.com/winobs/winobs/shipper/state"
)

// The acker alone, on a real checkpoint directory.

func testAcker(t *testing.T, dir, onCorrupt string) *acker {
	t.Helper()
	store, err := state.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return newAcker(store, onCorrupt, newBudget(1<<20), newMetrics([]string{"System"}), slog.New(slog.DiscardHandler))
}

func TestAckerSavesOnlyDeliveredPositions(t *testing.T) {
	dir := t.TempDir()
	a := testAcker(t, dir, shipconfig.Oldest)
	if r, err := a.start("System"); r.found || err != nil {
		t.Fatalf("fresh directory: found %v, err %v", r.found, err)
	}
	if err := a.budget.acquire(t.Context(), 500); err != nil {
		t.Fatal(err)
	}
	a.m.pending.WithLabelValues("System").Add(3)
	b := newBatch()
	b.positions["System"] = state.Checkpoint{Channel: "System", Source: "dump.xml", Offset: 900, RecordID: 3562}
	b.counts["System"], b.events, b.bytes, b.charge = 3, 3, 120, 500
	b.streams = []loki.Stream{{Labels: `{class="node", job="windows-events"}`}}
	// Loki stored two of System's entries (one of them re-stamped) and
	// refused one; the report counts by owner, the channel.
	rep := loki.Report{Stored: map[string]int{"System": 2}, Dropped: map[string]map[string]int{"System": {"rejected_400": 1}},
		Restamped: map[string]map[string]int{"System": {"too_far_behind": 1}}}
	// Read and batched, not yet delivered: nothing is saved.
	if r, _ := testAcker(t, dir, shipconfig.Oldest).start("System"); r.found {
		t.Fatal("a position was saved before its batch was acknowledged")
	}
	a.ack(b, rep)
	if u := a.saveFailure(); u != nil {
		t.Fatal(u.err)
	}
	for name, tc := range map[string]struct{ got, want float64 }{
		"sent":      {testutil.ToFloat64(a.m.sent.WithLabelValues("System")), 2},
		"dropped":   {testutil.ToFloat64(a.m.dropped.WithLabelValues("System", "rejected_400")), 1},
		"restamped": {testutil.ToFloat64(a.m.restamped.WithLabelValues("System", "too_far_behind")), 1},
		"pending":   {testutil.ToFloat64(a.m.pending.WithLabelValues("System")), 0},
		"bytes":     {testutil.ToFloat64(a.m.bytesSent), 120},
		"record id": {testutil.ToFloat64(a.m.cpRecord.WithLabelValues("System")), 3562},
		"in flight": {float64(a.budget.inUse()), 0},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %v, want %v", name, tc.got, tc.want)
		}
	}
	// A restart resumes where delivery got.
	r, err := testAcker(t, dir, shipconfig.Oldest).start("System")
	if err != nil || !r.found || r.cp.Offset != 900 || r.cp.RecordID != 3562 {
		t.Errorf("after restart: %+v found %v err %v", r.cp, r.found, err)
	}
	if cp, ok := a.acked("System"); !ok || cp.Offset != 900 {
		t.Errorf("acked %+v %v", cp, ok)
	}
}

func TestAckerAppliesTheCorruptCheckpointPolicy(t *testing.T) {
	for _, tc := range []struct {
		policy  string
		wantErr bool
	}{{shipconfig.Fail, true}, {shipconfig.Oldest, false}, {shipconfig.Newest, false}} {
		t.Run(tc.policy, func(t *testing.T) {
			dir := t.TempDir()
			a := testAcker(t, dir, tc.policy)
			if err := os.WriteFile(a.store.Path("System"), []byte("{not json"), 0o600); err != nil {
				t.Fatal(err)
			}
			r, err := a.start("System")
			if (err != nil) != tc.wantErr || r.found {
				t.Fatalf("err %v, found %v", err, r.found)
			}
			if !tc.wantErr && r.onCorrupt != tc.policy {
				t.Errorf("policy %q, want %q", r.onCorrupt, tc.policy)
			}
		})
	}
}

// The sent mark says how far any run's pushes reached: a restart that
// replays from an older checkpoint does not lower it until it pushes past
// it, and a new dump file at the same path starts it again.
func TestSentMarkNeverMovesBack(t *testing.T) {
	live := func(id uint64) state.Checkpoint { return state.Checkpoint{Channel: "System", RecordID: id} }
	dump := func(fp string, off int64) state.Checkpoint {
		return state.Checkpoint{Channel: "System", Source: "dump.xml", Fingerprint: fp, Offset: off, RecordID: uint64(off)}
	}
	tests := []struct {
		name    string
		earlier state.Checkpoint // the mark an earlier run left (zero: none)
		pushes  []state.Checkpoint
		want    []state.Checkpoint // the mark after each push
	}{
		{"first run", state.Checkpoint{}, []state.Checkpoint{live(5), live(9)}, []state.Checkpoint{live(5), live(9)}},
		{"a replay below the mark keeps it", live(500), []state.Checkpoint{live(120), live(480), live(500), live(501), live(502)},
			[]state.Checkpoint{live(500), live(500), live(500), live(501), live(502)}},
		{"a replay in the same dump file keeps it", dump("a", 900), []state.Checkpoint{dump("a", 300), dump("a", 901)},
			[]state.Checkpoint{dump("a", 900), dump("a", 901)}},
		{"another file at the path starts it again", dump("a", 900), []state.Checkpoint{dump("b", 300)},
			[]state.Checkpoint{dump("b", 300)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.earlier.Channel != "" {
				testAcker(t, dir, shipconfig.Oldest).store.SaveSent(tc.earlier)
			}
			a := testAcker(t, dir, shipconfig.Oldest)
			if got, ok := a.sent("System"); ok != (tc.earlier.Channel != "") || got.RecordID != tc.earlier.RecordID {
				t.Fatalf("the earlier mark read as %+v (%v)", got, ok)
			}
			for i, cp := range tc.pushes {
				b := newBatch()
				b.positions["System"] = cp
				a.sending(b)
				got, _ := a.store.Sent("System")
				if got.RecordID != tc.want[i].RecordID || got.Fingerprint != tc.want[i].Fingerprint {
					t.Errorf("after pushing %+v: mark %d %q, want %d %q", cp, got.RecordID, got.Fingerprint, tc.want[i].RecordID, tc.want[i].Fingerprint)
				}
			}
		})
	}
}

// A sent mark the disk refuses is said once a minute, with the count of
// the times left out, not once per batch: the full disk may hold the log.
func TestSentMarkFailureIsRateLimited(t *testing.T) {
	dir := t.TempDir()
	store, err := state.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	a := newAcker(store, shipconfig.Oldest, newBudget(1<<20), newMetrics([]string{"System"}), slog.New(slog.NewTextHandler(&logs, nil)))
	// Nothing can be made where the sent mark goes: its first creation fails.
	if err := os.MkdirAll(filepath.Join(strings.TrimSuffix(a.store.Path("System"), ".checkpoint")+".sent.tmp", "full"), 0o700); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		b := newBatch()
		b.positions["System"] = state.Checkpoint{Channel: "System", RecordID: uint64(i + 1)}
		a.sending(b)
	}
	if n := strings.Count(logs.String(), "cannot save the sent mark"); n != 1 {
		t.Errorf("%d warnings for 100 batches, want 1:\n%s", n, logs.String())
	}
	if _, ok := a.store.Sent("System"); ok {
		t.Error("a sent mark was saved on the full disk")
	}
}

// Issue 67: a sent mark carries each push's pin (the time it moved the
// channel's entries up to), and a replay's: those of the last mark that
// the acknowledged checkpoint has not passed, then the new push's, at most
// state.MaxPins; read back at start as they were saved.
func TestSentMarkCarriesThePins(t *testing.T) {
	dir := t.TempDir()
	a := testAcker(t, dir, shipconfig.Oldest)
	at := func(s int) time.Time { return time.Date(2026, 12, 7, 12, 0, s, 0, time.UTC) }
	push := func(id uint64, raised time.Time) {
		b := newBatch()
		b.positions["System"] = state.Checkpoint{Channel: "System", RecordID: id}
		if !raised.IsZero() {
			b.raise("System", raised)
		}
		a.sending(b)
	}
	pins := func() []string {
		cp, _ := a.store.Sent("System")
		var out []string
		for _, p := range cp.Pins {
			out = append(out, fmt.Sprintf("%d@%s", p.RecordID, p.At))
		}
		return out
	}
	push(10, at(1))
	push(20, time.Time{}) // moved none: its entries keep their event time
	if got, want := pins(), []string{"10@2026-12-07T12:00:01Z", "20@"}; !slices.Equal(got, want) {
		t.Errorf("pins %v, want %v", got, want)
	}
	// Push 10 acknowledged: its pin goes.
	if err := a.store.Save(state.Checkpoint{Channel: "System", RecordID: 10}); err != nil {
		t.Fatal(err)
	}
	push(30, at(3))
	if got, want := pins(), []string{"20@", "30@2026-12-07T12:00:03Z"}; !slices.Equal(got, want) {
		t.Errorf("after an acknowledgement: pins %v, want %v", got, want)
	}
	// A restart reads them, and a replay within the mark keeps them.
	b := testAcker(t, dir, shipconfig.Oldest)
	if cp, ok := b.sent("System"); !ok || len(cp.Pins) != 2 {
		t.Fatalf("read back: %+v", cp)
	}
	a = b
	push(25, at(9))
	if got := pins(); len(got) != 2 || got[1] != "30@2026-12-07T12:00:03Z" {
		t.Errorf("a replay within the mark changed its pins: %v", got)
	}
	for i := range state.MaxPins + 5 {
		push(uint64(40+i), at(i%60))
	}
	if got := pins(); len(got) != state.MaxPins || got[len(got)-1] != fmt.Sprintf("%d@%s", 40+state.MaxPins+4, at((state.MaxPins+4)%60).Format(time.RFC3339Nano)) {
		t.Errorf("%d pins, the newest last, want %d: %v", len(got), state.MaxPins, got)
	}
}

// The push pins a channel's entries that are not a replay: each older than
// the latest time one was moved up to is moved to it, counted once (an
// entry the formatter moved already is not counted again); a replay's
// entries keep the time their pin gave them.
func TestBatchPin(t *testing.T) {
	b := newBatch()
	t0 := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	for _, e := range []loki.Entry{
		{Time: t0, Line: []byte("a")},                                     // kept its event time
		{Time: t0.Add(2 * time.Hour), Line: []byte("b"), Moved: true},     // moved up by the formatter
		{Time: t0.Add(time.Minute), Line: []byte("c"), MaybeStored: true}, // a replay
		{Time: t0.Add(3 * time.Hour), Line: []byte("d")},                  // newer than the pin
	} {
		b.append("Application", `{job="windows-events"}`, e)
		if e.Moved {
			b.raise("Application", e.Time)
		}
	}
	b.append("System", `{job="windows-events"}`, loki.Entry{Time: t0, Line: []byte("s")})
	moved := b.pin()
	if !maps.Equal(moved, map[string]int{"Application": 1}) {
		t.Errorf("moved %v", moved)
	}
	var got []string
	for _, e := range b.streams[0].Entries {
		got = append(got, string(e.Line)+"@"+e.Time.Sub(t0).String())
	}
	if want := []string{"a@2h0m0s", "b@2h0m0s", "c@1m0s", "d@3h0m0s", "s@0s"}; !slices.Equal(got, want) {
		t.Errorf("times %v, want %v", got, want)
	}
	if p := b.pinOf("Application"); p.At != t0.Add(2*time.Hour).Format(time.RFC3339Nano) {
		t.Errorf("pin %+v", p)
	}
}
