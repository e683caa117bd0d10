package shipper

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/winobs/winobs/conffile"
	"github.com/winobs/winobs/shipper/ratelog"
	"github.com/winobs/winobs/shipper/shipconfig"
	"github.com/winobs/winobs/shipper/state"
)

// The health file (shipconfig.HealthFile, in the state directory) is where
// the shipper says it is alive and ready for the kubelet's exec probe
// (`eventlog-shipper probe FILE live|ready`). A file cannot be starved: any
// local process can hold every connection the metrics port serves, and a
// probe that waits behind them would have the kubelet restart a healthy
// shipper again and again.

// healthInterval is how often the file is rewritten; HealthStale is the
// age at which it says the shipper is stuck (a probe's timeout and period
// are far longer than the interval, so a live shipper is never stale).
const (
	healthInterval = 2 * time.Second
	HealthStale    = 30 * time.Second
)

// Health is the health file's content.
type Health struct {
	Time    time.Time `json:"time"`
	Ready   bool      `json:"ready"`
	Reason  string    `json:"reason,omitempty"`  // why not ready
	Stopped bool      `json:"stopped,omitempty"` // written as the shipper stops
}

// health is what /readyz and the health file say now.
func (s *Shipper) health() Health {
	h := Health{Time: s.now().UTC(), Ready: true}
	if !s.ready.Load() {
		h.Ready, h.Reason = false, "starting"
	} else if since, why := s.client.FailingSince(); !since.IsZero() && s.now().Sub(since) > notReadyAfter {
		h.Ready, h.Reason = false, "cannot deliver to Loki since "+since.UTC().Format(time.RFC3339)+": "+why
	} else if u := s.acker.saveFailure(); u != nil {
		h.Ready, h.Reason = false, "cannot save checkpoints since "+u.since.UTC().Format(time.RFC3339)
	} else if down := s.status.firstDown(); down != "" {
		h.Ready, h.Reason = false, down
	}
	return h
}

// healthSize is the health file's fixed size: rewritten in place, it needs
// no new disk block after the first write, so a full state disk (which
// stops checkpoints) cannot make a live shipper look dead, and no rename
// races a probe that holds the file open (Windows refuses that).
const healthSize = 256

// writeHealth keeps the health file current until the returned stop.
func (s *Shipper) writeHealth() (stop func()) {
	return keepHealth(filepath.Join(s.cfg.StateDir, shipconfig.HealthFile), s.health, s.log)
}

// createNew makes a new file; a variable so a test can have the disk
// refuse it, as a full one does.
var createNew = state.CreateNew

// keepHealth writes health() to path every healthInterval until the
// returned stop, which writes that the shipper stopped: a stopped shipper is
// neither live nor ready, and the file stays, to be reused in place by the
// next start even when the disk is full by then.
func keepHealth(path string, health func() Health, log *slog.Logger) (stop func()) {
	logs := ratelog.New(log, time.Minute)
	var f *os.File
	write := func(h Health) {
		if f == nil {
			var err error
			if f, err = openHealth(path); err != nil {
				logs.Error("health_file", "cannot write the health file the kubelet's probe reads", "path", path, "error", err)
				return
			}
		}
		h.Reason = conffile.Excerpt(h.Reason)
		b, _ := json.Marshal(h)
		b = append(b, bytes.Repeat([]byte(" "), max(healthSize-len(b), 0))...)
		if _, err := f.WriteAt(b, 0); err != nil {
			logs.Error("health_file", "cannot write the health file the kubelet's probe reads", "path", path, "error", err)
		}
	}
	stopWriting := every(healthInterval, func() { write(health()) })
	return func() {
		stopWriting()
		write(Health{Time: time.Now().UTC(), Reason: "stopped", Stopped: true})
		if f != nil {
			f.Close()
		}
	}
}

// openHealth opens the health file to be rewritten in place. The one an
// earlier run left is reused, so a restart on a full state disk can still
// say it is alive. Whatever else is at the path (a link, a hard link, a
// directory, a file of another size) is never written through: it is
// removed, or moved aside when it cannot be (a directory with files in it),
// and a new file is made.
func openHealth(path string) (*os.File, error) {
	if f, _ := state.OpenInPlace(path, healthSize); f != nil {
		return f, nil // an error here is what is replaced below
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		aside := fmt.Sprintf("%s.aside-%d", path, time.Now().UnixNano())
		if rerr := os.Rename(path, aside); rerr != nil {
			return nil, fmt.Errorf("%w; cannot move it aside either: %v", err, rerr)
		}
	}
	if err := createNew(path, bytes.Repeat([]byte(" "), healthSize)); err != nil {
		return nil, err
	}
	f, err := state.OpenInPlace(path, healthSize)
	if f == nil && err == nil {
		err = fmt.Errorf("%s was replaced while it was made", path)
	}
	return f, err
}

// CheckHealth reads a health file as the probe does: live when it was
// written within HealthStale of now, ready when it also says ready.
func CheckHealth(path string, ready bool, now time.Time) error {
	b, err := conffile.ReadFileNoFollow(path, 4<<10)
	if err != nil {
		return fmt.Errorf("health file %s: %w", path, err)
	}
	var h Health
	if err := json.Unmarshal(b, &h); err != nil || h.Time.IsZero() {
		return fmt.Errorf("health file %s: not the shipper's", path)
	}
	if h.Stopped {
		return fmt.Errorf("health file %s: the shipper stopped at %s", path, h.Time.Format(time.RFC3339))
	}
	if age := now.Sub(h.Time); age > HealthStale || age < -HealthStale {
		return fmt.Errorf("health file %s written %s ago: the shipper is stuck", path, age.Round(time.Second))
	}
	if ready && !h.Ready {
		return errors.New("not ready: " + h.Reason)
	}
	return nil
}
