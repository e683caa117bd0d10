package shipper

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/winobs/winobs/conffile"
	"github.com/winobs/winobs/shipper/ratelog"
	"github.com/winobs/winobs/shipper/shipconfig"
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
	Time   time.Time `json:"time"`
	Ready  bool      `json:"ready"`
	Reason string    `json:"reason,omitempty"` // why not ready
}

// health is what /readyz and the health file say now.
func (s *Shipper) health() Health {
	h := Health{Time: s.now().UTC(), Ready: true}
	if !s.ready.Load() {
		h.Ready, h.Reason = false, "starting"
	} else if since := s.client.FailingSince(); !since.IsZero() && s.now().Sub(since) > notReadyAfter {
		h.Ready, h.Reason = false, "cannot deliver to Loki since "+since.UTC().Format(time.RFC3339)
	} else if u := s.acker.saveFailure(); u != nil {
		h.Ready, h.Reason = false, "cannot save checkpoints since "+u.since.UTC().Format(time.RFC3339)
	}
	return h
}

// healthSize is the health file's fixed size: rewritten in place, it needs
// no new disk block after the first write, so a full state disk (which
// stops checkpoints) cannot make a live shipper look dead, and no rename
// races a probe that holds the file open (Windows refuses that).
const healthSize = 256

// writeHealth keeps the health file current until the returned stop, which
// removes it: a stopped shipper is neither live nor ready.
func (s *Shipper) writeHealth() (stop func()) {
	path := filepath.Join(s.cfg.StateDir, shipconfig.HealthFile)
	logs := ratelog.New(s.log, time.Minute)
	var f *os.File
	write := func() {
		if f == nil {
			var err error
			if f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600); err != nil {
				logs.Error("health_file", "cannot write the health file the kubelet's probe reads", "path", path, "error", err)
				return
			}
		}
		h := s.health()
		h.Reason = conffile.Excerpt(h.Reason)
		b, _ := json.Marshal(h)
		b = append(b, bytes.Repeat([]byte(" "), max(healthSize-len(b), 0))...)
		if _, err := f.WriteAt(b, 0); err != nil {
			logs.Error("health_file", "cannot write the health file the kubelet's probe reads", "path", path, "error", err)
		}
	}
	stopWriting := every(healthInterval, write)
	return func() {
		stopWriting()
		if f != nil {
			f.Close()
		}
		os.Remove(path)
	}
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
	if age := now.Sub(h.Time); age > HealthStale || age < -HealthStale {
		return fmt.Errorf("health file %s written %s ago: the shipper is stuck", path, age.Round(time.Second))
	}
	if ready && !h.Ready {
		return errors.New("not ready: " + h.Reason)
	}
	return nil
}
