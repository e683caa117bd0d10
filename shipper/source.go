package shipper

import (
	"context"
	"log/slog"

	"github.com/winobs/winobs/shipper/ratelog"
)

// source reads one channel: it resumes where its positions say, hands each
// record to emit, and returns nil when a finite source is done. It knows
// nothing of batching, pushing or saving: delivered records come back to it
// only as positions.acked.
type source interface {
	channel() string
	run(ctx context.Context, env sourceEnv) error
}

// sourceEnv is everything a source is given.
type sourceEnv struct {
	positions positions
	// emit hands a record on once the in-flight budget has room; it fails
	// only when ctx is done.
	emit func(ctx context.Context, r record) error
	m    *metrics
	log  *slog.Logger
	// logs is log bounded per reason, for what may repeat per event.
	logs *ratelog.Limiter
}
