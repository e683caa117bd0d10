package shipper

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/winobs/winobs/shipper/checkpoint"
	"github.com/winobs/winobs/shipper/loki"
	"github.com/winobs/winobs/shipper/shipconfig"
)

// The acker alone, on a real checkpoint directory.

func testAcker(t *testing.T, dir, onCorrupt string) *acker {
	t.Helper()
	store, err := checkpoint.Open(dir)
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
	b.positions["System"] = checkpoint.Checkpoint{Channel: "System", Source: "dump.xml", Offset: 900, RecordID: 3562}
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
	live := func(id uint64) checkpoint.Checkpoint { return checkpoint.Checkpoint{Channel: "System", RecordID: id} }
	dump := func(fp string, off int64) checkpoint.Checkpoint {
		return checkpoint.Checkpoint{Channel: "System", Source: "dump.xml", Fingerprint: fp, Offset: off, RecordID: uint64(off)}
	}
	tests := []struct {
		name    string
		earlier checkpoint.Checkpoint // the mark an earlier run left (zero: none)
		pushes  []checkpoint.Checkpoint
		want    []checkpoint.Checkpoint // the mark after each push
	}{
		{"first run", checkpoint.Checkpoint{}, []checkpoint.Checkpoint{live(5), live(9)}, []checkpoint.Checkpoint{live(5), live(9)}},
		{"a replay below the mark keeps it", live(500), []checkpoint.Checkpoint{live(120), live(480), live(500), live(501), live(502)},
			[]checkpoint.Checkpoint{live(500), live(500), live(500), live(501), live(502)}},
		{"a replay in the same dump file keeps it", dump("a", 900), []checkpoint.Checkpoint{dump("a", 300), dump("a", 901)},
			[]checkpoint.Checkpoint{dump("a", 900), dump("a", 901)}},
		{"another file at the path starts it again", dump("a", 900), []checkpoint.Checkpoint{dump("b", 300)},
			[]checkpoint.Checkpoint{dump("b", 300)}},
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
	store, err := checkpoint.Open(dir)
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
		b.positions["System"] = checkpoint.Checkpoint{Channel: "System", RecordID: uint64(i + 1)}
		a.sending(b)
	}
	if n := strings.Count(logs.String(), "cannot save the sent mark"); n != 1 {
		t.Errorf("%d warnings for 100 batches, want 1:\n%s", n, logs.String())
	}
	if _, ok := a.store.Sent("System"); ok {
		t.Error("a sent mark was saved on the full disk")
	}
}
