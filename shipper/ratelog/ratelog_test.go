package ratelog

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// 10,000 repeats of one reason within a minute log once, then once more
// with the count when the interval has passed; another reason is not held
// back by the first.
func TestLimiter(t *testing.T) {
	var buf bytes.Buffer
	l := New(slog.New(slog.NewTextHandler(&buf, nil)), time.Minute)
	now := time.Unix(1800000000, 0)
	l.now = func() time.Time { return now }
	for range 10000 {
		l.Warn("malformed", "skipping an event", "offset", 1)
	}
	l.Error("other", "another problem")
	now = now.Add(time.Minute)
	l.Warn("malformed", "skipping an event", "offset", 2)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines:\n%s", len(lines), buf.String())
	}
	if !strings.Contains(lines[2], "suppressed_since_last=9999") || strings.Contains(lines[0], "suppressed") {
		t.Errorf("counts: %q, %q", lines[0], lines[2])
	}
	if !strings.Contains(lines[1], "level=ERROR") || !strings.Contains(lines[1], "another problem") {
		t.Errorf("other reason: %q", lines[1])
	}
}
