package shipper

import (
	"context"
	"errors"
	"io"
	"os"
	"time"

	"github.com/winobs/winobs/shipper/shipconfig"

	"github.com/winobs/winobs/shipper/checkpoint"
	"github.com/winobs/winobs/shipper/dump"
)

// dumpSource ships a wevtutil RenderedXml dump, resuming at the offset of
// its checkpoint. Dumps carry RenderingInfo, so no publisher metadata (and
// no Windows) is needed.
type dumpSource struct {
	d             shipconfig.Dump
	maxEventBytes int
}

func (ds *dumpSource) channel() string { return ds.d.Channel }

// followPoll is how often a followed dump is checked for growth.
const followPoll = time.Second

func (ds *dumpSource) run(ctx context.Context, env sourceEnv) error {
	offset, err := ds.start(env.positions)
	if err != nil {
		return err
	}
	r, err := dump.Open(ds.d.Path, offset, ds.maxEventBytes)
	if err != nil {
		return err
	}
	defer r.Close()
	for {
		rec, err := r.NextContext(ctx)
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
			env.log.Warn("skipping an event larger than maxEventBytes", "channel", ds.d.Channel, "offset", rec.Offset)
			if err := env.emit(ctx, record{channel: ds.d.Channel, cp: cp, drop: "too_large"}); err != nil {
				return err
			}
			continue
		case err != nil:
			return err
		}
		if err := env.emit(ctx, record{channel: ds.d.Channel, xml: rec.XML, cp: cp, size: int64(len(rec.XML))}); err != nil {
			return err
		}
	}
}

// start returns the offset to resume from: the checkpoint's, the start of a
// dump never shipped, or what the corrupt-checkpoint policy says.
func (ds *dumpSource) start(pos positions) (int64, error) {
	cp, found, policy, err := pos.start(ds.d.Channel)
	switch {
	case err != nil:
		return 0, err
	case policy == shipconfig.Newest:
		st, err := os.Stat(ds.d.Path)
		if err != nil {
			return 0, err
		}
		return st.Size(), nil
	case policy == shipconfig.Oldest || !found || cp.Source != ds.d.Path:
		return 0, nil
	}
	return cp.Offset, nil
}
