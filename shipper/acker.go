package shipper

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/winobs/winobs/contract"
	"github.com/winobs/winobs/shipper/lanes"
	"github.com/winobs/winobs/shipper/loki"
	"github.com/winobs/winobs/shipper/ratelog"
	"github.com/winobs/winobs/shipper/shipconfig"
	"github.com/winobs/winobs/shipper/state"
)

// positions is what a source sees of the checkpoints: where to resume, a
// start position to record before anything is delivered, and how far
// delivery has got.
type positions interface {
	start(channel string) (resume, error)
	mark(cp state.Checkpoint) error
	acked(channel string) (state.Checkpoint, bool)
}

// acker owns the checkpoints. Only a delivered batch moves them, and only
// after every earlier batch was delivered (one batch is in flight at a
// time), so a saved position never skips an undelivered event.
type acker struct {
	store     *state.Store
	onCorrupt string // shipconfig's onCorruptCheckpoint
	budget    *budget
	m         *metrics
	log       *slog.Logger
	now       func() time.Time

	// reach is, per channel, the furthest sent mark saved, by this run or
	// an earlier one. A replay's pushes must not lower it: the next run
	// would take what an earlier run pushed for new events (and change
	// lanes inside it). Only the push loop uses it.
	reach map[string]state.Checkpoint
	// pins are, per channel, the pins of its last sent mark, saved or read
	// at start: a new mark carries those its acknowledged checkpoint has
	// not passed (a replay's), then its own push's.
	pins map[string][]state.Pin
	// sentLog says a failing sent mark once a minute, not every batch: a
	// full disk may be where the log goes too.
	sentLog *ratelog.Limiter

	// unsaved is the first checkpoint save that failed since the last one
	// that succeeded (a full or read-only state disk).
	mu      sync.Mutex
	unsaved *unsavedCheckpoints
}

// unsavedCheckpoints: saves failing since, the latest error, and the
// newest position of each channel that is still to be saved.
type unsavedCheckpoints struct {
	since time.Time
	err   error
	cps   map[string]state.Checkpoint
}

// saveFailure is why checkpoints are not being saved, or nil.
func (a *acker) saveFailure() *unsavedCheckpoints {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.unsaved
}

// newAcker is the acker of a run: its checkpoints in store, the failing
// sent mark said at most once a minute.
func newAcker(store *state.Store, onCorrupt string, bud *budget, m *metrics, log *slog.Logger) *acker {
	return &acker{store: store, onCorrupt: onCorrupt, budget: bud, m: m, log: log, now: time.Now,
		sentLog: ratelog.New(log, time.Minute)}
}

var _ positions = (*acker)(nil)

// resume is where a source starts: its checkpoint, if one was found, or for
// a corrupt checkpoint without a valid previous copy the configured
// onCorruptCheckpoint policy (shipconfig.Oldest or Newest).
type resume struct {
	cp        state.Checkpoint
	found     bool
	onCorrupt string // "" unless the checkpoint was corrupt
}

// start loads a channel's checkpoint and reports problems loudly. A corrupt
// checkpoint under the policy "fail" is an error.
func (a *acker) start(channel string) (resume, error) {
	cp, found, note, err := a.store.Load(channel)
	if note != "" {
		a.log.Error("CHECKPOINT PROBLEM: "+note, "channel", channel)
	}
	if err == nil {
		return resume{cp: cp, found: found}, nil
	}
	if !errors.Is(err, state.ErrCorrupt) {
		// Unreadable, not corrupt: an operator must look; guessing could
		// re-ship or skip a whole channel.
		return resume{}, fmt.Errorf("checkpoint: %w", err)
	}
	a.log.Error("CHECKPOINT CORRUPT: applying onCorruptCheckpoint", "channel", channel, "error", err, "policy", a.onCorrupt)
	a.m.dropped.WithLabelValues(channel, contract.DropCorrupt).Add(0) // make the series visible
	if a.onCorrupt == shipconfig.Fail {
		return resume{}, fmt.Errorf("%w (onCorruptCheckpoint: fail)", err)
	}
	return resume{onCorrupt: a.onCorrupt}, nil
}

// mark saves a position that needs no delivery: a bookmark taken at start.
func (a *acker) mark(cp state.Checkpoint) error { return a.store.Save(cp) }

// sent is a channel's sent mark at start: how far an earlier run's
// pushes reached.
func (a *acker) sent(channel string) (state.Checkpoint, bool) {
	cp, ok := a.store.Sent(channel)
	if ok {
		if a.reach == nil {
			a.reach = map[string]state.Checkpoint{}
		}
		a.reach[channel] = cp
		a.keepPins(channel, cp.Pins)
	}
	return cp, ok
}

func (a *acker) keepPins(channel string, pins []state.Pin) {
	if a.pins == nil {
		a.pins = map[string][]state.Pin{}
	}
	a.pins[channel] = pins
}

// pinsFor are the pins a new sent mark of channel carries: its last
// mark's beyond the acknowledged checkpoint, then p, at most
// state.MaxPins (the oldest go).
func (a *acker) pinsFor(channel string, cp state.Checkpoint, p state.Pin) []state.Pin {
	acked, _ := a.acked(channel)
	var out []state.Pin
	for _, old := range a.pins[channel] {
		pos := cp
		pos.RecordID, pos.Offset = old.RecordID, old.Offset
		if beyond(pos, acked) {
			out = append(out, old)
		}
	}
	out = append(out, p)
	return out[max(len(out)-state.MaxPins, 0):]
}

// sending records, before a batch is pushed, how far it reaches in each
// channel (state.Store.SaveSent), unless an earlier push reached
// further. A mark that cannot be saved is logged, not fatal: stopping
// would deliver nothing; a crash meanwhile may show replayed events twice.
func (a *acker) sending(b *batch) {
	for ch, cp := range b.positions {
		if r, ok := a.reach[ch]; ok && !beyond(cp, r) {
			continue
		}
		cp.Pins = a.pinsFor(ch, cp, b.pinOf(ch))
		if err := a.store.SaveSent(cp); err != nil {
			a.sentLog.Warn("sent:"+ch, "cannot save the sent mark; after a crash, replayed events may show twice", "channel", ch, "error", err)
			continue
		}
		if a.reach != nil {
			delete(a.reach, ch) // this run's pushes only move forward
		}
		a.keepPins(ch, cp.Pins)
	}
}

// beyond reports whether position cp is past mark: further in the same dump
// file, in another file, or a later record of a live channel.
func beyond(cp, mark state.Checkpoint) bool {
	if cp.Source != "" || mark.Source != "" {
		return cp.Source != mark.Source || cp.Fingerprint != mark.Fingerprint || cp.Offset > mark.Offset
	}
	return cp.RecordID > mark.RecordID
}

// acked is the last delivered position of a channel.
func (a *acker) acked(channel string) (state.Checkpoint, bool) { return a.store.Peek(channel) }

// savePlans writes a channel's lane plans beside its checkpoints: the
// acker owns every durable write of the shipper's state.
func (a *acker) savePlans(channel string, p lanes.Plans) error { return a.store.SavePlans(channel, p) }

// plans reads a channel's saved lane plans, with a note when the file was
// damaged or of an older version.
func (a *acker) plans(channel string) (lanes.Plans, string, error) { return a.store.Plans(channel) }

// save records positions, and any still unsaved from earlier batches. A
// position that cannot be saved is delivered but not recorded. Stopping
// would not help: the restart would resend its batch and fail here again,
// forever, delivering nothing newer. So delivery goes on, every batch (and
// the end of the run) tries again, readiness and the checkpoint-age gauge
// say so, and only a restart meanwhile resends (Loki drops the identical
// entries).
func (a *acker) save(positions map[string]state.Checkpoint) {
	a.mu.Lock()
	defer a.mu.Unlock()
	todo := positions
	if a.unsaved != nil {
		todo = a.unsaved.cps
		maps.Copy(todo, positions) // a channel's newer position wins
	}
	var failed map[string]state.Checkpoint
	var lastErr error
	for ch, cp := range todo {
		if err := a.store.Save(cp); err != nil {
			if failed == nil {
				failed = map[string]state.Checkpoint{}
			}
			failed[ch], lastErr = cp, fmt.Errorf("saving checkpoint of %s: %w", ch, err)
			continue
		}
		a.m.cpTime.WithLabelValues(ch).Set(float64(a.now().Unix()))
		if cp.RecordID != 0 {
			a.m.cpRecord.WithLabelValues(ch).Set(float64(cp.RecordID))
		}
	}
	switch {
	case failed != nil && a.unsaved == nil:
		a.unsaved = &unsavedCheckpoints{since: a.now(), err: lastErr, cps: failed}
		a.log.Error("CHECKPOINT NOT SAVED: the state directory refuses writes (full or read-only?); delivering on and retrying with every batch, a restart now resends from the last saved position",
			"error", lastErr)
	case failed != nil:
		a.unsaved.err, a.unsaved.cps = lastErr, failed
	case a.unsaved != nil:
		a.log.Warn("checkpoints saved again", "unsaved_for", a.now().Sub(a.unsaved.since).Round(time.Second).String())
		a.unsaved = nil
	}
}

// flush tries once more to save what could not be saved; at the end of a
// run it is the last chance before the next start resends.
func (a *acker) flush() { a.save(nil) }

// ack records a batch the client is done with: every entry Loki stored or
// gave up on with a reason, as its report says. Only then does the
// checkpoint move past the batch.
func (a *acker) ack(b *batch, rep loki.Report) {
	a.save(b.positions)
	// Every event ends in one counter: sent (stored), or dropped with its
	// reason.
	// Entries are owned by their config channel, whichever stream they
	// share.
	for ch, n := range b.counts {
		stored := rep.Stored[ch]
		a.m.sent.WithLabelValues(ch).Add(float64(stored))
		accounted := stored
		for reason, n := range rep.Dropped[ch] {
			a.m.dropped.WithLabelValues(ch, reason).Add(float64(n))
			accounted += n
		}
		for reason, n := range rep.Restamped[ch] {
			a.m.restamped.WithLabelValues(ch, reason).Add(float64(n))
		}
		a.m.presumed.WithLabelValues(ch).Add(float64(rep.Presumed[ch]))
		if accounted != n {
			// A client bug, never Loki's doing: say so rather than miscount.
			a.log.Error("BUG: the push report does not account for every event of the batch", "channel", ch, "events", n, "accounted", accounted)
		}
		a.m.pending.WithLabelValues(ch).Sub(float64(n))
	}
	a.m.bytesSent.Add(float64(b.bytes))
	a.budget.release(b.charge)
	a.m.inFlight.Set(float64(a.budget.inUse()))
}
