package shipper

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
