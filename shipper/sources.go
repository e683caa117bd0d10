package shipper

import (
	"context"
	"errors"
	"fmt"

	"github.com/winobs/winobs/shipper/shipconfig"

	"github.com/winobs/winobs/shipper/checkpoint"
)

// What the dump and live sources share.

// emit hands a record to the batcher once the in-flight budget has room.
func (s *Shipper) emit(ctx context.Context, out chan<- record, r record) error {
	if err := s.budget.acquire(ctx, r.size); err != nil {
		return err
	}
	select {
	case out <- r:
		s.m.inFlight.Set(float64(s.budget.inUse()))
		return nil
	case <-ctx.Done():
		s.budget.release(r.size)
		return ctx.Err()
	}
}

// loadCheckpoint loads a channel's checkpoint and reports problems loudly.
// For a corrupt checkpoint without a valid previous copy, policy is the
// configured one (oldest or newest); with "fail" it is an error.
func (s *Shipper) loadCheckpoint(channel string) (cp checkpoint.Checkpoint, found bool, policy string, err error) {
	cp, found, note, err := s.store.Load(channel)
	if note != "" {
		s.log.Error("CHECKPOINT PROBLEM: "+note, "channel", channel)
	}
	if err == nil {
		return cp, found, "", nil
	}
	if !errors.Is(err, checkpoint.ErrCorrupt) {
		// Unreadable, not corrupt: an operator must look; guessing could
		// re-ship or skip a whole channel.
		return cp, false, "", fmt.Errorf("checkpoint: %w", err)
	}
	s.log.Error("CHECKPOINT CORRUPT: applying onCorruptCheckpoint", "channel", channel, "error", err, "policy", s.cfg.OnCorruptCheckpoint)
	s.m.dropped.WithLabelValues(channel, "corrupt_checkpoint").Add(0) // make the series visible
	if s.cfg.OnCorruptCheckpoint == shipconfig.Fail {
		return cp, false, "", fmt.Errorf("%w (onCorruptCheckpoint: fail)", err)
	}
	return cp, false, s.cfg.OnCorruptCheckpoint, nil
}
