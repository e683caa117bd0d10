package shipper

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/winobs/winobs/shipper/checkpoint"
	"github.com/winobs/winobs/shipper/dump"
)

// dumpSource ships a wevtutil RenderedXml dump, resuming at the offset of
// its checkpoint. Dumps carry RenderingInfo, so no publisher metadata (and
// no Windows) is needed.
type dumpSource struct {
	d Dump
	s *Shipper
}

func (ds *dumpSource) channel() string { return ds.d.Channel }

// followPoll is how often a followed dump is checked for growth.
const followPoll = time.Second

func (ds *dumpSource) run(ctx context.Context, out chan<- record) error {
	offset, err := ds.start()
	if err != nil {
		return err
	}
	r, err := dump.Open(ds.d.Path, offset, ds.s.cfg.MaxEventBytes)
	if err != nil {
		return err
	}
	defer r.Close()
	for {
		rec, err := r.Next()
		cp := checkpoint.Checkpoint{Channel: ds.d.Channel, Source: ds.d.Path, Offset: rec.Offset}
		switch {
		case errors.Is(err, io.EOF):
			if !ds.d.Follow {
				return nil
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(followPoll):
			}
			continue
		case errors.Is(err, dump.ErrTooLarge):
			ds.s.log.Warn("skipping an event larger than maxEventBytes", "channel", ds.d.Channel, "offset", rec.Offset)
			if err := ds.s.emit(ctx, out, record{channel: ds.d.Channel, cp: cp, drop: "too_large"}); err != nil {
				return err
			}
			continue
		case err != nil:
			return err
		}
		if err := ds.s.emit(ctx, out, record{channel: ds.d.Channel, xml: rec.XML, cp: cp, size: int64(len(rec.XML))}); err != nil {
			return err
		}
	}
}

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

// start returns the offset to resume from: the checkpoint's, the start of a
// dump never shipped, or what the corrupt-checkpoint policy says.
func (ds *dumpSource) start() (int64, error) {
	cp, found, policy, err := ds.s.loadCheckpoint(ds.d.Channel)
	switch {
	case err != nil:
		return 0, err
	case policy == Newest:
		st, err := os.Stat(ds.d.Path)
		if err != nil {
			return 0, err
		}
		return st.Size(), nil
	case policy == Oldest || !found || cp.Source != ds.d.Path:
		return 0, nil
	}
	return cp.Offset, nil
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
	if s.cfg.OnCorruptCheckpoint == Fail {
		return cp, false, "", fmt.Errorf("%w (onCorruptCheckpoint: fail)", err)
	}
	return cp, false, s.cfg.OnCorruptCheckpoint, nil
}
