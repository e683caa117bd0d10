package state

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/winobs/winobs/shipper/lanes"
)

// lanesPath is where a channel's lane plans are kept, beside its checkpoint.
func (s *Store) lanesPath(channel string) string {
	return strings.TrimSuffix(s.Path(channel), ".checkpoint") + ".lanes"
}

// planFile is a lanes file: a channel's lane plans, sealed as checkpoints
// are.
type planFile struct {
	Channel string `json:"channel"`
	lanes.Plans
	// Whole is the plan of a version that split whole channels, not
	// streams; read as Plans.All.
	Whole lanes.Plan `json:"lanes,omitempty"`
	Saved time.Time  `json:"saved"`
}

// SavePlans stores a channel's lane plans before any event is pushed under
// them, with the previous plans kept as a backup: a replay needs the plan
// its events were first pushed under, or it lands them in other streams,
// where Loki's dedupe does not see them.
func (s *Store) SavePlans(channel string, p lanes.Plans) error {
	data, err := seal(planFile{Channel: channel, Plans: p, Saved: s.now().UTC()})
	if err != nil {
		return err
	}
	return s.replace(s.lanesPath(channel), "lane plan", data)
}

// Plans returns a channel's lane plans: none on a first start, the previous
// copy (with a note to report) when the current file is unreadable, and an
// error (wrapping ErrCorrupt for a damaged file) when no copy can be read.
func (s *Store) Plans(channel string) (p lanes.Plans, note string, err error) {
	path := s.lanesPath(channel)
	cur, err := s.readLanes(path, channel)
	if err == nil {
		return cur, "", nil
	}
	bak, berr := s.readLanes(path+".bak", channel)
	missing := errors.Is(err, os.ErrNotExist)
	switch {
	case berr == nil && missing:
		return bak, "", nil // a crash between replace's renames: the new plan was never used
	case berr == nil:
		return bak, fmt.Sprintf("%v; using the previous lane plan: events replayed from its last change on may land in another stream and show twice", err), nil
	case missing && errors.Is(berr, os.ErrNotExist):
		return lanes.Plans{}, "", nil
	case missing:
		return lanes.Plans{}, "", fmt.Errorf("lane plan missing; previous copy: %w", berr)
	}
	return lanes.Plans{}, "", fmt.Errorf("lane plan: %w; previous copy: %v", err, berr)
}

// readLanes reads a lanes file and checks the plans it holds.
func (s *Store) readLanes(path, channel string) (lanes.Plans, error) {
	var f planFile
	if err := s.readSealed(path, &f); err != nil {
		return lanes.Plans{}, err
	}
	if f.Channel != channel {
		return lanes.Plans{}, fmt.Errorf("%w %s: belongs to channel %q", ErrCorrupt, path, f.Channel)
	}
	if f.Whole != nil {
		f.All = f.Whole
	}
	if err := f.Check(); err != nil {
		return lanes.Plans{}, fmt.Errorf("%w %s: %v", ErrCorrupt, path, err)
	}
	return f.Plans, nil
}
