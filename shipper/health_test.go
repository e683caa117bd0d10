package shipper

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/winobs/winobs/shipper/state"
)

// The probe's verdict from the health file: live while it is fresh, ready
// while it also says so; anything else fails with a reason.
func TestCheckHealth(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	for _, tc := range []struct {
		name, content string
		live, ready   string // "" passes, else a word of the error
	}{
		{"fresh and ready", `{"time":"2026-12-04T11:59:58Z","ready":true}`, "", ""},
		{"fresh, not ready", `{"time":"2026-12-04T11:59:58Z","ready":false,"reason":"cannot deliver to Loki since 2026-12-04T11:50:00Z"}`, "", "cannot deliver"},
		{"stale", `{"time":"2026-12-04T11:59:00Z","ready":true}`, "stuck", "stuck"},
		{"from the future", `{"time":"2026-12-04T12:05:00Z","ready":true}`, "stuck", "stuck"},
		{"not JSON", `ok`, "not the shipper's", "not the shipper's"},
		{"no time", `{"ready":true}`, "not the shipper's", "not the shipper's"},
	} {
		p := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_"))
		os.WriteFile(p, []byte(tc.content), 0o600)
		for _, c := range []struct {
			ready bool
			want  string
		}{{false, tc.live}, {true, tc.ready}} {
			err := CheckHealth(p, c.ready, now)
			if (c.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s, ready %v: %v, want %q", tc.name, c.ready, err, c.want)
			}
		}
	}
	if err := CheckHealth(filepath.Join(dir, "missing"), false, now); err == nil {
		t.Error("a missing file passes")
	}
	link := filepath.Join(dir, "link")
	os.Symlink(filepath.Join(dir, "fresh_and_ready"), link)
	if err := CheckHealth(link, false, now); err == nil {
		t.Error("a link is read through")
	}
}

// The health file is never written through what is planted at its path:
// a link to another file, a hard link, a directory (with files in it, so
// it cannot be removed). Each is replaced by a file of the shipper's, the
// planted target is untouched, and the probe passes while the shipper runs
// and fails once it stopped. (Was: a link's target truncated and
// overwritten every 2 s, and a directory failed every probe forever.)
func TestHealthFileNotWrittenThrough(t *testing.T) {
	const victim = "a system file the state directory must not reach\n"
	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, path, target string)
	}{
		{"symbolic link", func(t *testing.T, path, target string) {
			if err := os.Symlink(target, path); err != nil {
				t.Skip(err)
			}
		}},
		{"symbolic link to a file of the health file's size", func(t *testing.T, path, target string) {
			os.WriteFile(target, []byte(strings.Repeat("x", healthSize)), 0o600)
			if err := os.Symlink(target, path); err != nil {
				t.Skip(err)
			}
		}},
		{"hard link to a file of the health file's size", func(t *testing.T, path, target string) {
			os.WriteFile(target, []byte(strings.Repeat("x", healthSize)), 0o600)
			if err := os.Link(target, path); err != nil {
				t.Skip(err)
			}
		}},
		{"directory with a file in it", func(t *testing.T, path, _ string) {
			os.MkdirAll(filepath.Join(path, "inside"), 0o700)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state, elsewhere := t.TempDir(), t.TempDir()
			target := filepath.Join(elsewhere, "victim")
			os.WriteFile(target, []byte(victim), 0o600)
			path := filepath.Join(state, "health.json")
			tc.plant(t, path, target)
			before, _ := os.ReadFile(target)
			stop := keepHealth(path, func() Health { return Health{Time: time.Now().UTC(), Ready: true} }, slog.New(slog.DiscardHandler))
			for _, ready := range []bool{false, true} {
				if err := CheckHealth(path, ready, time.Now()); err != nil {
					t.Errorf("probe (ready %v) while running: %v", ready, err)
				}
			}
			stop()
			if after, _ := os.ReadFile(target); !bytes.Equal(before, after) {
				t.Errorf("the planted target was written: %q → %q", before, after)
			}
			if err := CheckHealth(path, false, time.Now()); err == nil || !strings.Contains(err.Error(), "stopped") {
				t.Errorf("live probe after the stop: %v, want the shipper stopped", err)
			}
			if tc.name == "directory with a file in it" {
				if m, _ := filepath.Glob(path + ".aside-*/inside"); len(m) != 1 {
					t.Errorf("the directory was not kept aside: %v", m)
				}
			}
		})
	}
}

// A restart on a state disk that is still full reuses the health file the
// run before left, in place, so the probe says live while the shipper
// delivers. (Was: the file was removed at the stop and could not be made
// again, and the liveness probe restarted the shipper about every minute.)
func TestHealthFileOnFullDisk(t *testing.T) {
	path := filepath.Join(t.TempDir(), "health.json")
	quiet := slog.New(slog.DiscardHandler)
	ready := func() Health { return Health{Time: time.Now().UTC(), Ready: true} }
	keepHealth(path, ready, quiet)() // a first run, on a disk with room

	createNew = func(string, []byte) error { return syscall.ENOSPC }
	defer func() { createNew = state.CreateNew }()
	stop := keepHealth(path, ready, quiet)
	defer stop()
	if err := CheckHealth(path, true, time.Now()); err != nil {
		t.Errorf("restarted on a full disk: %v", err)
	}

	// With nothing to reuse, the full disk is all that can be said.
	other := filepath.Join(t.TempDir(), "health.json")
	stopOther := keepHealth(other, ready, quiet)
	defer stopOther()
	if err := CheckHealth(other, false, time.Now()); err == nil {
		t.Error("a health file without room to make one")
	}
}
