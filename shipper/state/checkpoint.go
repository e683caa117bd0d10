// Package state is the eventlog-shipper's durable state: one directory it
// owns alone (owner.go: SecureDir, refusing what another account planted),
// holding per channel its checkpoint, how far Loki has stored it
// (checkpoint.go); its sent mark, the newest event a push may have
// delivered, written before the push (sent.go); and its lanes' plans,
// saved before an event is pushed under them (plans.go). A checkpoint is
// written only after Loki accepted every earlier event of its channel;
// every file is written atomically (temp file, fsync, rename, directory
// fsync) with the previous copy kept, and checksummed, so a torn or
// zero-filled file is detected instead of silently restarting from "now"
// (store.go).
package state

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/winobs/winobs/winname"
)

// Checkpoint is the delivered position of one channel.
type Checkpoint struct {
	Channel string `json:"channel"`
	// Bookmark is the Windows bookmark XML (live subscriptions).
	Bookmark string `json:"bookmark,omitempty"`
	// Source and Offset locate a dump file position.
	Source string `json:"source,omitempty"`
	Offset int64  `json:"offset,omitempty"`
	// Fingerprint identifies the dump file by its first bytes, so a restart
	// onto another file at the same path starts it from the beginning.
	Fingerprint string `json:"fingerprint,omitempty"`
	// RecordID and TimeCreated describe the last delivered event.
	RecordID    uint64    `json:"recordID,omitempty"`
	TimeCreated string    `json:"timeCreated,omitempty"`
	Saved       time.Time `json:"saved"`
	// Pins, in a sent mark, are the timestamps the pushes it covers gave
	// their entries, each push's up to its position (Pin): a replay after
	// a crash stamps those entries the same, so Loki drops the copies it
	// holds (it deduplicates identical timestamps and lines only).
	Pins []Pin `json:"pins,omitempty"`
}

// Pin is what one push did to a channel's timestamps, for its events up to
// a position (RecordID, or Offset in a dump): every entry of the channel
// that it moved up (behind its stream, or too old for Loki) it moved to At,
// and every other older than At too; an entry it did not move keeps its
// event time. At is empty when the push moved none.
type Pin struct {
	RecordID uint64 `json:"recordID,omitempty"`
	Offset   int64  `json:"offset,omitempty"`
	At       string `json:"at,omitempty"`
}

// MaxPins bounds a sent mark's pins: the pushes of a run that are not
// acknowledged yet, and a replay's; the oldest go first.
const MaxPins = 16

// ErrCorrupt reports a checkpoint file that exists but cannot be trusted.
var ErrCorrupt = errors.New("corrupt checkpoint")

// Path is the checkpoint file of a channel. The mapping is one to one: a
// name of letters, digits, '-' and '.' is used as it is; any other gets its
// other characters as '_' (which a plain name never holds) and a hash of the
// exact name, so Sysmon/Operational and Sysmon_Operational never share a
// file. A name Windows would open as a device (NUL, COM1, LPT9.log: package
// winname) is prefixed with '_' and hashed, so its checkpoint is a file on
// every node even where a config let such a name through. (Channel names that differ only
// in case are refused by the config: Windows treats them as one channel,
// and NTFS as one file.)
func (s *Store) Path(channel string) string {
	safe := legacyName(channel)
	if winname.Device(safe) {
		safe = "_" + safe // "NUL-…" still opens NUL when an extension follows
	}
	if safe != channel {
		sum := sha256.Sum256([]byte(channel))
		safe += "-" + hex.EncodeToString(sum[:8])
	}
	return filepath.Join(s.dir, safe+".checkpoint")
}

// legacyPath is the file before the mapping was one to one; a checkpoint
// found only there is still read (and checked to be this channel's). A
// device's name has none: reading it would read the device.
func (s *Store) legacyPath(channel string) (string, bool) {
	name := legacyName(channel)
	path := filepath.Join(s.dir, name+".checkpoint")
	return path, path != s.Path(channel) && !winname.Device(name)
}

// legacyName is the file name before the mapping was one to one.
func legacyName(channel string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' {
			return r
		}
		return '_'
	}, channel)
}

// MaxFileBytes bounds a checkpoint file: a real one (a bookmark, a path and
// a few numbers) is far smaller, and a planted huge file must not exhaust
// memory.
const MaxFileBytes = 1 << 20

// Save writes cp for its channel. The previous checkpoint becomes the .bak.
func (s *Store) Save(cp Checkpoint) error { return s.saveAt(s.Path(cp.Channel), "checkpoint", cp) }

// saveAt writes cp to path, keeping the previous file as path.bak.
func (s *Store) saveAt(path, what string, cp Checkpoint) error {
	data, err := s.encode(cp)
	if err != nil {
		return err
	}
	return s.replace(path, what, data)
}

// encode is cp as a file holds it: JSON and its checksum.
func (s *Store) encode(cp Checkpoint) ([]byte, error) {
	cp.Saved = s.now().UTC()
	return seal(cp)
}

// Load returns a channel's checkpoint. found is false when the channel has
// none (first start). When the current file is corrupt, it is moved aside,
// and the previous copy is used if valid: the result then says so in Note,
// to be reported loudly. If no copy is valid, the error wraps ErrCorrupt and
// the caller applies its configured policy.
func (s *Store) Load(channel string) (cp Checkpoint, found bool, note string, err error) {
	path := s.Path(channel)
	cp, err = s.read(path, channel)
	switch {
	case err == nil:
		return cp, true, "", nil
	case errors.Is(err, os.ErrNotExist):
		// A crash between the two renames of Save leaves only the .bak.
		if cp, err := s.read(path+".bak", channel); err == nil {
			return cp, true, "checkpoint missing, resumed from the previous copy", nil
		}
		if legacy, ok := s.legacyPath(channel); ok {
			if cp, err := s.read(legacy, channel); err == nil {
				return cp, true, "", nil
			}
		}
		return Checkpoint{}, false, "", nil
	case !errors.Is(err, ErrCorrupt):
		return Checkpoint{}, false, "", err
	}
	aside := fmt.Sprintf("%s.corrupt-%s", path, s.now().UTC().Format("20060102T150405Z"))
	if rerr := os.Rename(path, aside); rerr != nil {
		return Checkpoint{}, false, "", errors.Join(err, rerr)
	}
	if bak, berr := s.read(path+".bak", channel); berr == nil {
		return bak, true, fmt.Sprintf("%v; kept it as %s and resumed from the previous copy (saved %s)", err, aside, bak.Saved.Format(time.RFC3339)), nil
	}
	return Checkpoint{}, false, "", fmt.Errorf("%w; kept it as %s, and no valid previous copy exists", err, aside)
}

// Peek returns the channel's valid checkpoint (or its previous copy) without
// touching any file; Load is what handles a corrupt one.
func (s *Store) Peek(channel string) (Checkpoint, bool) {
	paths := []string{s.Path(channel), s.Path(channel) + ".bak"}
	if legacy, ok := s.legacyPath(channel); ok {
		paths = append(paths, legacy)
	}
	for _, p := range paths {
		if cp, err := s.read(p, channel); err == nil {
			return cp, true
		}
	}
	return Checkpoint{}, false
}

// read reads a checkpoint file (see readSealed) and checks it is
// channel's.
func (s *Store) read(path, channel string) (Checkpoint, error) {
	data, err := s.readRaw(path)
	if err != nil {
		return Checkpoint{}, err
	}
	return decode(data, path, channel)
}

// decode checks a checkpoint file's checksum and that it is channel's.
func decode(data []byte, path, channel string) (Checkpoint, error) {
	var cp Checkpoint
	if err := verify(data, path, &cp); err != nil {
		return Checkpoint{}, err
	}
	if cp.Channel != channel {
		return Checkpoint{}, fmt.Errorf("%w %s: belongs to channel %q", ErrCorrupt, path, cp.Channel)
	}
	return cp, nil
}
