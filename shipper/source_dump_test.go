package shipper

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/winobs/winobs/internal/fixture"
	"github.com/winobs/winobs/shipper/checkpoint"
	"github.com/winobs/winobs/shipper/shipconfig"
)

// The dump source alone: it knows positions and emit, nothing else.

// fixedPositions is a positions with one stored checkpoint per channel.
type fixedPositions map[string]checkpoint.Checkpoint

func (p fixedPositions) start(ch string) (checkpoint.Checkpoint, bool, string, error) {
	cp, ok := p[ch]
	return cp, ok, "", nil
}
func (p fixedPositions) mark(cp checkpoint.Checkpoint) error { p[cp.Channel] = cp; return nil }
func (p fixedPositions) acked(ch string) (checkpoint.Checkpoint, bool) {
	cp, ok := p[ch]
	return cp, ok
}

func runDumpSource(t *testing.T, path string, pos positions, maxEventBytes int) []record {
	t.Helper()
	var got []record
	env := sourceEnv{positions: pos, m: newMetrics([]string{"System"}), log: slog.New(slog.DiscardHandler),
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
