package shipper

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/winobs/winobs/internal/testkit/fixture"
	"github.com/winobs/winobs/shipper/ratelog"
	"github.com/winobs/winobs/shipper/shipconfig"
	"github.com/winobs/winobs/shipper/state"
)

// The dump source alone: it knows positions and emit, nothing else.

// fixedPositions is a positions with one stored checkpoint per channel.
type fixedPositions map[string]state.Checkpoint

func (p fixedPositions) start(ch string) (resume, error) {
	cp, ok := p[ch]
	return resume{cp: cp, found: ok}, nil
}
func (p fixedPositions) mark(cp state.Checkpoint) error { p[cp.Channel] = cp; return nil }
func (p fixedPositions) acked(ch string) (state.Checkpoint, bool) {
	cp, ok := p[ch]
	return cp, ok
}

func runDumpSource(t *testing.T, path string, pos positions, maxEventBytes int) []record {
	t.Helper()
	var got []record
	m := newMetrics([]string{"System"})
	env := sourceEnv{positions: pos, m: m, log: slog.New(slog.DiscardHandler), logs: ratelog.New(nil, 0), status: newSourceStatus(m, time.Now),
		emit: func(_ context.Context, r record) error { got = append(got, r); return nil }}
	src := &dumpSource{d: shipconfig.Dump{Path: path, Channel: "System"}, maxEventBytes: maxEventBytes}
	if err := src.run(t.Context(), env); err != nil {
		t.Fatal(err)
	}
	return got
}

func TestDumpSourceResumesAtItsCheckpoint(t *testing.T) {
	var dump strings.Builder
	samples := fixture.EventSamples(t)
	for _, xml := range samples {
		dump.Write(xml)
		dump.WriteString("\r\n")
	}
	path := filepath.Join(t.TempDir(), "system.xml")
	if err := os.WriteFile(path, []byte(dump.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	all := runDumpSource(t, path, fixedPositions{}, 1<<20)
	if len(all) != len(samples) {
		t.Fatalf("%d records, want %d", len(all), len(samples))
	}
	for i, r := range all {
		if r.xml == nil || r.size != int64(len(r.xml)) || r.cp.Source != path || (i > 0 && r.cp.Offset <= all[i-1].cp.Offset) {
			t.Errorf("record %d: %d bytes, size %d, position %+v", i, len(r.xml), r.size, r.cp)
		}
	}
	// From the third record's checkpoint, the rest and nothing else.
	rest := runDumpSource(t, path, fixedPositions{"System": all[2].cp}, 1<<20)
	if len(rest) != len(samples)-3 || string(rest[0].xml) != string(all[3].xml) {
		t.Errorf("resumed with %d records, want %d starting at the fourth", len(rest), len(samples)-3)
	}
	// A checkpoint of another file starts this one from the beginning.
	if n := len(runDumpSource(t, path, fixedPositions{"System": {Channel: "System", Source: "other.xml", Offset: 1}}, 1<<20)); n != len(samples) {
		t.Errorf("%d records for a checkpoint of another file", n)
	}
	// Events over maxEventBytes become counted skips with a position.
	for _, r := range runDumpSource(t, path, fixedPositions{}, 10) {
		if r.xml != nil || r.drop != "too_large" || r.cp.Offset == 0 {
			t.Errorf("oversized event: %+v", r)
		}
	}
}

// events returns n distinct events (record ids from first) as a UTF-8 dump.
func events(t *testing.T, first, n int) string {
	t.Helper()
	good := string(fixture.Read(t, fixture.EventLog, "scm-7036-print-spooler.xml"))
	var b strings.Builder
	for i := range n {
		b.WriteString(strings.Replace(good, "<EventRecordID>3562<", fmt.Sprintf("<EventRecordID>%d<", first+i), 1) + "\r\n")
	}
	return b.String()
}

// followed runs a followed dump source until cancelled; records arrive on
// the returned channel.
func followed(t *testing.T, path string, pos positions, maxEventBytes int) (<-chan record, *metrics) {
	out, m, _ := followedWithStatus(t, path, pos, maxEventBytes)
	return out, m
}

// followedWithStatus is followed, with the sources' status it reports to.
func followedWithStatus(t *testing.T, path string, pos positions, maxEventBytes int) (<-chan record, *metrics, *sourceStatus) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	out := make(chan record, 1024)
	m := newMetrics([]string{"System"})
	status := newSourceStatus(m, time.Now)
	env := sourceEnv{positions: pos, m: m, log: slog.New(slog.DiscardHandler), logs: ratelog.New(nil, 0), status: status,
		emit: func(ctx context.Context, r record) error {
			select {
			case out <- r:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}}
	src := &dumpSource{d: shipconfig.Dump{Path: path, Channel: "System", Follow: true}, maxEventBytes: maxEventBytes}
	done := make(chan error, 1)
	go func() { done <- src.run(ctx, env) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("source: %v", err)
		}
	})
	return out, m, status
}

// take waits for n records (at most 10 s) and returns their record ids.
func take(t *testing.T, in <-chan record, n int) []string {
	t.Helper()
	var ids []string
	for len(ids) < n {
		select {
		case r := <-in:
			id := r.drop
			if r.xml != nil {
				_, after, _ := strings.Cut(string(r.xml), "<EventRecordID>")
				id, _, _ = strings.Cut(after, "<")
			}
			ids = append(ids, id)
		case <-time.After(fixture.Patience):
			t.Fatalf("got %d of %d records: %v", len(ids), n, ids)
		}
	}
	return ids
}

// Followed like tail -F: truncated and rewritten (shorter or longer than
// what was read), rotated (moved away, with a last append to the old file,
// and a new file at the path): every event of every file is read, and each
// change is counted by reason.
func TestDumpSourceFollowsRotationAndTruncation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "System.xml")
	os.WriteFile(path, []byte(events(t, 1, 20)), 0o644)
	recs, m := followed(t, path, fixedPositions{}, 1<<20)
	if ids := take(t, recs, 20); ids[0] != "1" || ids[19] != "20" {
		t.Fatalf("first file: %v", ids)
	}
	// Truncated and rewritten with fewer bytes.
	os.WriteFile(path, []byte(events(t, 101, 5)), 0o644)
	if ids := take(t, recs, 5); ids[0] != "101" || ids[4] != "105" {
		t.Errorf("after truncation: %v", ids)
	}
	// Rewritten in place with more bytes than were read (same inode).
	os.WriteFile(path, []byte(events(t, 201, 50)), 0o644)
	if ids := take(t, recs, 50); ids[0] != "201" || ids[49] != "250" {
		t.Errorf("after a longer rewrite: %v", ids[:3])
	}
	// Appended to, moved away, a new file created at the path.
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(events(t, 251, 3))
	f.Close()
	os.Rename(path, path+".1")
	os.WriteFile(path, []byte(events(t, 301, 100)), 0o644)
	ids := take(t, recs, 103)
	if ids[0] != "251" || ids[2] != "253" || ids[3] != "301" || ids[102] != "400" {
		t.Errorf("across the rotation: %v … %v", ids[:4], ids[100:])
	}
	for reason, want := range map[string]float64{reopenTruncated: 1, reopenReplaced: 1, reopenRotated: 1} {
		if got := testutil.ToFloat64(m.dumpReopens.WithLabelValues("System", reason)); got != want {
			t.Errorf("reopens{reason=%s} = %v, want %v", reason, got, want)
		}
	}
}

// A checkpoint of a file that was replaced before a restart: a smaller file
// and a larger one with another start are both read from their start.
func TestDumpSourceRestartOntoAReplacedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "System.xml")
	os.WriteFile(path, []byte(events(t, 1, 100)), 0o644)
	all := runDumpSource(t, path, fixedPositions{}, 1<<20)
	cp := all[89].cp
	if cp.Fingerprint == "" {
		t.Fatal("the checkpoint does not name the file")
	}
	os.WriteFile(path, []byte(events(t, 1001, 60)), 0o644) // smaller than the offset
	if got := runDumpSource(t, path, fixedPositions{"System": cp}, 1<<20); len(got) != 60 {
		t.Errorf("smaller replacement: %d records, want 60", len(got))
	}
	os.WriteFile(path, []byte(events(t, 2001, 200)), 0o644) // larger, another start
	if got := runDumpSource(t, path, fixedPositions{"System": cp}, 1<<20); len(got) != 200 {
		t.Errorf("larger replacement: %d records, want 200", len(got))
	}
	os.WriteFile(path, []byte(events(t, 1, 100)+events(t, 101, 5)), 0o644) // the same file, grown
	if got := runDumpSource(t, path, fixedPositions{"System": cp}, 1<<20); len(got) != 15 {
		t.Errorf("the same file grown: %d records, want the 15 after the checkpoint", len(got))
	}
}

// An oversized event still being written when follow reaches the end of
// the file is counted once its end arrives; a dump that ends in an event
// cut short hands the cut event on (the formatter counts it as malformed).
func TestDumpSourceCountsEventsItCannotRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "System.xml")
	huge := strings.Replace(events(t, 2, 1), "</EventData>", "<Data Name='blob'>"+strings.Repeat("d", 200<<10)+"</Data></EventData>", 1)
	os.WriteFile(path, []byte(events(t, 1, 1)+huge[:100<<10]), 0o644)
	recs, _ := followed(t, path, fixedPositions{}, 64<<10)
	if ids := take(t, recs, 1); ids[0] != "1" {
		t.Fatalf("%v", ids)
	}
	time.Sleep(2 * followPoll) // the reader waits inside the oversized event
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(huge[100<<10:] + events(t, 3, 1))
	f.Close()
	if ids := take(t, recs, 2); ids[0] != "too_large" || ids[1] != "3" {
		t.Errorf("after the oversized event: %v", ids)
	}

	cut := filepath.Join(t.TempDir(), "cut.xml")
	all := events(t, 1, 3)
	os.WriteFile(cut, []byte(all[:len(all)-200]), 0o644)
	got := runDumpSource(t, cut, fixedPositions{}, 1<<20)
	if len(got) != 3 || got[2].xml == nil || !strings.Contains(string(got[2].xml), "<EventRecordID>3<") {
		t.Errorf("%d records; the cut event must be handed on", len(got))
	}
}

// Issue 58: a followed dump that does not exist yet at start is waited
// for, like tail -F, its source down meanwhile (winobs_shipper_source_up 0,
// and readiness says why); once written it is read and the source is up.
// (Was: abandoned after one "source stopped" line, readiness OK.)
func TestFollowedDumpIsAwaited(t *testing.T) {
	path := filepath.Join(t.TempDir(), "later.xml")
	out, m, status := followedWithStatus(t, path, fixedPositions{}, 1<<20)
	deadline := time.Now().Add(fixture.Patience)
	for status.firstDown() == "" && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if down := status.firstDown(); !strings.Contains(down, "channel System down since") || !strings.Contains(down, "waiting for the followed dump "+path) {
		t.Fatalf("down: %q", down)
	}
	if up := testutil.ToFloat64(m.sourceUp.WithLabelValues("System")); up != 0 {
		t.Errorf("source_up %v while waiting", up)
	}
	samples := fixture.EventSamples(t)
	var dump strings.Builder
	for _, xml := range samples {
		dump.Write(xml)
		dump.WriteString("\r\n")
	}
	os.WriteFile(path, []byte(dump.String()), 0o644)
	if got := take(t, out, len(samples)); len(got) != len(samples) {
		t.Errorf("%d records, want %d", len(got), len(samples))
	}
	if down := status.firstDown(); down != "" || testutil.ToFloat64(m.sourceUp.WithLabelValues("System")) != 1 {
		t.Errorf("after the dump appeared: %q", down)
	}
}
