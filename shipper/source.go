package shipper

import (
	"context"
	"log/slog"
	"sync"
	"time"

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
	// status records a source down (waiting for its dump, or stopped) and
	// up again: metrics and readiness say it.
	status *sourceStatus
}

// sourceStatus is which sources are down, since when and why: a source
// that cannot read must never look healthy (readiness, the probe and
// winobs_shipper_source_up say it).
type sourceStatus struct {
	m    *metrics
	now  func() time.Time
	mu   sync.Mutex
	down map[string]sourceDown
}

type sourceDown struct {
	since  time.Time
	reason string
}

func newSourceStatus(m *metrics, now func() time.Time) *sourceStatus {
	return &sourceStatus{m: m, now: now, down: map[string]sourceDown{}}
}

// setDown marks channel's source down for reason (kept since it first went
// down).
func (st *sourceStatus) setDown(channel, reason string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	d, ok := st.down[channel]
	if !ok {
		d.since = st.now()
	}
	d.reason = reason
	st.down[channel] = d
	st.m.sourceUp.WithLabelValues(channel).Set(0)
}

// setUp marks channel's source reading.
func (st *sourceStatus) setUp(channel string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	delete(st.down, channel)
	st.m.sourceUp.WithLabelValues(channel).Set(1)
}

// firstDown is a down source to report, "" when every source is up.
func (st *sourceStatus) firstDown() string {
	st.mu.Lock()
	defer st.mu.Unlock()
	var worst string
	for ch, d := range st.down {
		msg := "channel " + ch + " down since " + d.since.UTC().Format(time.RFC3339) + ": " + d.reason
		if worst == "" || msg < worst {
			worst = msg
		}
	}
	return worst
}
