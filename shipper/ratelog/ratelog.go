// Package ratelog bounds how much a repeated problem logs: the first
// occurrence of each reason is logged at once, later ones at most once per
// interval, with the number left out since. A 9 MB dump of malformed events
// then costs a few log lines, not 99 MB of them, and nothing goes unsaid.
package ratelog

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Limiter logs through a slog.Logger, per reason. Reasons are names the
// code chooses (never data read from a node), so the set stays small.
type Limiter struct {
	log   *slog.Logger
	every time.Duration
	now   func() time.Time

	mu      sync.Mutex
	reasons map[string]*reason
}

type reason struct {
	last       time.Time
	suppressed int
}

// New returns a limiter logging each reason at most once per every (a
// minute when 0); a nil log discards.
func New(log *slog.Logger, every time.Duration) *Limiter {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if every <= 0 {
		every = time.Minute
	}
	return &Limiter{log: log, every: every, now: time.Now, reasons: map[string]*reason{}}
}

// Warn logs msg at warning level under key.
func (l *Limiter) Warn(key, msg string, attrs ...any) { l.emit(slog.LevelWarn, key, msg, attrs) }

// Error logs msg at error level under key.
func (l *Limiter) Error(key, msg string, attrs ...any) { l.emit(slog.LevelError, key, msg, attrs) }

func (l *Limiter) emit(level slog.Level, key, msg string, attrs []any) {
	l.mu.Lock()
	now := l.now()
	r := l.reasons[key]
	if r == nil {
		r = &reason{}
		l.reasons[key] = r
	}
	if !r.last.IsZero() && now.Sub(r.last) < l.every {
		r.suppressed++
		l.mu.Unlock()
		return
	}
	suppressed := r.suppressed
	r.last, r.suppressed = now, 0
	l.mu.Unlock()
	if suppressed > 0 {
		attrs = append(attrs, "suppressed_since_last", suppressed)
	}
	l.log.Log(context.Background(), level, msg, attrs...)
}
