package shipper

import (
	"context"
	"errors"
	"io"
	"os"
	"time"

	"github.com/winobs/winobs/contract"
	"github.com/winobs/winobs/shipper/dump"
	"github.com/winobs/winobs/shipper/shipconfig"
	"github.com/winobs/winobs/shipper/state"
)

// dumpSource ships a wevtutil RenderedXml dump, resuming at the offset of
// its checkpoint. Dumps carry RenderingInfo, so no publisher metadata (and
// no Windows) is needed. A followed dump is followed like tail -F: a file
// rotated away, truncated or replaced at the path is noticed, the rest of
// the old one read, and the new one read from its start; the checkpoint
// names the file by its first bytes, so a restart onto a replaced file
// starts it from the beginning too.
type dumpSource struct {
	d             shipconfig.Dump
	maxEventBytes int
}

func (ds *dumpSource) channel() string { return ds.d.Channel }

// followPoll is how often a followed dump is checked for growth.
const followPoll = time.Second

// Why a followed dump is read again from the start.
const (
	reopenRotated   = "rotated"   // another file is at the path (moved away, new file created)
	reopenTruncated = "truncated" // the file is shorter than what was read
	reopenReplaced  = "replaced"  // the file's first bytes changed (rewritten in place, or another file before a restart)
)

// reopenReasons are exported from start for every dump channel.
var reopenReasons = []string{reopenRotated, reopenTruncated, reopenReplaced}

func (ds *dumpSource) run(ctx context.Context, env sourceEnv) error {
	offset, err := ds.start(env)
	if err != nil {
		return err
	}
	for {
		r, err := dump.Open(ds.d.Path, offset, ds.maxEventBytes)
		if errors.Is(err, os.ErrNotExist) && ds.d.Follow {
			// Like tail -F: a followed dump not written yet (or rotated
			// away and not yet re-created) is waited for, said while it
			// lasts.
			if err := ds.await(ctx, env); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		reason, err := ds.read(ctx, env, r)
		r.Close()
		if err != nil || reason == "" {
			return err
		}
		env.m.dumpReopens.WithLabelValues(ds.d.Channel, reason).Inc()
		env.log.Warn("followed dump changed at its path; reading the new file from its start", "channel", ds.d.Channel, "path", ds.d.Path, "reason", reason)
		offset = 0
	}
}

// await waits for the followed dump to appear, its source down meanwhile.
func (ds *dumpSource) await(ctx context.Context, env sourceEnv) error {
	env.status.setDown(ds.d.Channel, "waiting for the followed dump "+ds.d.Path+" to appear")
	env.log.Warn("followed dump does not exist; waiting for it", "channel", ds.d.Channel, "path", ds.d.Path)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(followPoll):
		}
		if _, err := os.Stat(ds.d.Path); err == nil {
			env.status.setUp(ds.d.Channel)
			env.log.Info("followed dump appeared", "channel", ds.d.Channel, "path", ds.d.Path)
			return nil
		}
	}
}

// read emits the records of one file. It returns "" when a dump that is not
// followed is done, or the reason a followed one must be opened again.
func (ds *dumpSource) read(ctx context.Context, env sourceEnv, r *dump.Reader) (string, error) {
	for {
		if err := ds.toEnd(ctx, env, r); err != nil {
			return "", err
		}
		if !ds.d.Follow {
			return "", ds.rest(ctx, env, r)
		}
		// Wait, then look at the path before reading on: a file rewritten
		// meanwhile must not be read on from the old offset.
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(followPoll):
		}
		reason := ds.changed(r)
		if reason == "" {
			continue
		}
		if reason == reopenRotated {
			// The writer may have appended before it moved the file.
			if err := ds.toEnd(ctx, env, r); err != nil {
				return "", err
			}
		}
		// The old file ends here: what is left of a last event is counted.
		return reason, ds.rest(ctx, env, r)
	}
}

// toEnd emits every complete event up to the end of the file as it is now;
// an oversized one as a counted skip.
func (ds *dumpSource) toEnd(ctx context.Context, env sourceEnv, r *dump.Reader) error {
	for {
		rec, err := r.NextContext(ctx)
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case errors.Is(err, dump.ErrTooLarge):
			err = ds.emitDrop(ctx, env, rec.Offset, r.Fingerprint(), contract.DropTooLarge)
		case err == nil:
			err = ds.emitEvent(ctx, env, rec, r.Fingerprint())
		}
		if err != nil {
			return err
		}
	}
}

// rest counts an event cut short at the end of a file: an oversized one as
// too_large, another as malformed (the formatter fails to parse it).
func (ds *dumpSource) rest(ctx context.Context, env sourceEnv, r *dump.Reader) error {
	rec, err := r.Rest()
	switch {
	case errors.Is(err, io.EOF):
		return nil
	case errors.Is(err, dump.ErrTooLarge):
		return ds.emitDrop(ctx, env, rec.Offset, r.Fingerprint(), contract.DropTooLarge)
	}
	env.logs.Warn("cut_short", "the dump ends in an event cut short", "channel", ds.d.Channel, "offset", rec.Offset, "bytes", len(rec.XML))
	return ds.emitEvent(ctx, env, rec, r.Fingerprint())
}

func (ds *dumpSource) emitEvent(ctx context.Context, env sourceEnv, rec dump.Record, fp string) error {
	return env.emit(ctx, record{channel: ds.d.Channel, xml: rec.XML, cp: ds.cp(rec.Offset, fp), size: int64(len(rec.XML))})
}

func (ds *dumpSource) emitDrop(ctx context.Context, env sourceEnv, offset int64, fp, reason string) error {
	env.logs.Warn("too_large", "skipping an event larger than maxEventBytes", "channel", ds.d.Channel, "offset", offset)
	return env.emit(ctx, record{channel: ds.d.Channel, cp: ds.cp(offset, fp), drop: reason})
}

func (ds *dumpSource) cp(offset int64, fp string) state.Checkpoint {
	return state.Checkpoint{Channel: ds.d.Channel, Source: ds.d.Path, Offset: offset, Fingerprint: fp}
}

// changed tells whether the file at the path is no longer the one read:
// another file there, the file shorter than what was read, or its first
// bytes rewritten. A path that is missing for now (between a rotation's
// move and the new file) is not a change yet.
func (ds *dumpSource) changed(r *dump.Reader) string {
	st, err := os.Stat(ds.d.Path)
	switch {
	case err != nil:
		return ""
	case !os.SameFile(st, r.Info()):
		return reopenRotated
	case st.Size() < r.Read():
		return reopenTruncated
	}
	if same, err := dump.SameStart(ds.d.Path, r.Fingerprint()); err == nil && !same {
		return reopenReplaced
	}
	r.Refingerprint() // a file that started short is known by more of its start
	return ""
}

// start returns the offset to resume from: the checkpoint's when it is of
// this file, the start of a dump never shipped or of a file that replaced
// the one checkpointed, or what the corrupt-checkpoint policy says.
func (ds *dumpSource) start(env sourceEnv) (int64, error) {
	r, err := env.positions.start(ds.d.Channel)
	cp := r.cp
	switch {
	case err != nil:
		return 0, err
	case r.onCorrupt == shipconfig.Newest:
		st, err := os.Stat(ds.d.Path)
		if errors.Is(err, os.ErrNotExist) && ds.d.Follow {
			return 0, nil // everything a dump written later holds is new
		}
		if err != nil {
			return 0, err
		}
		return st.Size(), nil
	case r.onCorrupt == shipconfig.Oldest || !r.found || cp.Source != ds.d.Path:
		return 0, nil
	}
	if reason := ds.replaced(cp); reason != "" {
		env.m.dumpReopens.WithLabelValues(ds.d.Channel, reason).Inc()
		env.log.Warn("the dump is not the file the checkpoint was taken in; reading it from its start",
			"channel", ds.d.Channel, "path", ds.d.Path, "reason", reason, "checkpoint_offset", cp.Offset)
		return 0, nil
	}
	return cp.Offset, nil
}

// replaced tells whether the file at the path is not the one cp was taken
// in: shorter than the offset, or starting otherwise.
func (ds *dumpSource) replaced(cp state.Checkpoint) string {
	st, err := os.Stat(ds.d.Path)
	if err != nil {
		return "" // Open reports it
	}
	if st.Size() < cp.Offset {
		return reopenTruncated
	}
	if cp.Fingerprint != "" {
		if same, err := dump.SameStart(ds.d.Path, cp.Fingerprint); err == nil && !same {
			return reopenReplaced
		}
	}
	return ""
}
