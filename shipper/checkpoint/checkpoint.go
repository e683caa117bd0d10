// Package checkpoint stores how far each channel has been delivered. A
// checkpoint is written only after Loki accepted every earlier event of its
// channel, atomically (temp file, fsync, rename, directory fsync) with the
// previous copy kept, and checksummed, so a torn or zero-filled file is
// detected instead of silently restarting from "now".
package checkpoint

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/winobs/winobs/conffile"
	"github.com/winobs/winobs/shipper/lanes"
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

// Store keeps one file per channel in a directory.
type Store struct {
	dir       string
	now       func() time.Time
	untrusted func(string)
	mu        sync.Mutex
	ignored   map[string]bool // state files ignored for their owner
}

// Open makes dir the shipper's own (SecureDir), before any state in it is
// read, and returns its store.
func Open(dir string) (*Store, error) {
	if err := SecureDir(dir); err != nil {
		return nil, err
	}
	return &Store{dir: dir, now: time.Now, untrusted: func(string) {}, ignored: map[string]bool{}}, nil
}

// OnUntrusted has f hear once of every state file the store ignores for
// its owner (ErrUntrusted; the message names the file and its owner), to
// be logged and counted. Set it before the first read.
func (s *Store) OnUntrusted(f func(msg string)) { s.untrusted = f }

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

// replace writes data to path through a new file, keeping the previous
// file as path.bak.
func (s *Store) replace(path, what string, data []byte) error {
	tmp := path + ".tmp"
	if err := CreateNew(tmp, data); err != nil {
		return fmt.Errorf("writing %s: %w", what, err)
	}
	if err := os.Rename(path, path+".bak"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("keeping the previous %s: %w", what, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("replacing %s: %w", what, err)
	}
	return syncDir(s.dir)
}

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

// encode is cp as a file holds it: JSON and its checksum.
func (s *Store) encode(cp Checkpoint) ([]byte, error) {
	cp.Saved = s.now().UTC()
	return seal(cp)
}

// seal is v as JSON followed by its checksum, which verify checks.
func seal(v any) ([]byte, error) {
	payload, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return fmt.Appendf(payload, "\ncrc32c:%08x\n", crc32.Checksum(payload, crcTable)), nil
}

// sentPath is where a channel's sent mark is kept, beside its checkpoint.
func (s *Store) sentPath(channel string) string {
	return strings.TrimSuffix(s.Path(channel), ".checkpoint") + ".sent"
}

// SaveSent records, before a push, the position of the newest event it
// holds: after a crash, the events from the checkpoint up to this mark may
// be in Loki already (the push may have been stored and not acknowledged),
// and the next run treats them so, and changes a channel's lanes only
// after it (a replay must land in the stream its first copy went to).
//
// So it must still be written when the disk is full, as the checkpoint may
// not be: it lives in a file of two fixed slots, created once and then
// overwritten in place, which needs no new block (NTFS, ext4, tmpfs). Each
// slot is numbered and checksummed and the newer valid one counts; a write
// goes to the older, so a torn write damages only a mark whose push has not
// begun. A disk that refuses even that (read-only, failing, copy-on-write
// and full) makes the save fail, which the caller reports.
func (s *Store) SaveSent(cp Checkpoint) error {
	cp.Bookmark = "" // a replay is recognised by record id; keeps the slot small
	path := s.sentPath(cp.Channel)
	f, slots, err := openSent(path)
	if err != nil {
		return fmt.Errorf("the sent mark: %w", err)
	}
	if f == nil { // none yet, or one from before the slots: made once
		data, err := s.encodeSlot(sentRecord{Seq: 1, Checkpoint: cp})
		if err != nil {
			return err
		}
		data = append(data, make([]byte, sentSlot)...)
		if err := CreateNew(path+".tmp", data); err != nil {
			return fmt.Errorf("creating the sent mark: %w", err)
		}
		return os.Rename(path+".tmp", path)
	}
	defer f.Close()
	older, seq := 0, uint64(0)
	for i, r := range slots {
		seq = max(seq, r.Seq)
		if r.Seq < slots[older].Seq {
			older = i
		}
	}
	data, err := s.encodeSlot(sentRecord{Seq: seq + 1, Checkpoint: cp})
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(data, int64(older*sentSlot)); err != nil {
		return fmt.Errorf("writing the sent mark: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("writing the sent mark: %w", err)
	}
	return f.Close()
}

// Sent returns the channel's sent mark, if a valid one exists.
func (s *Store) Sent(channel string) (Checkpoint, bool) {
	path := s.sentPath(channel)
	data, err := s.readRaw(path)
	if err != nil {
		return Checkpoint{}, false
	}
	if len(data) != sentSlot*sentSlots { // a mark from before the slots
		cp, err := decode(data, path, channel)
		return cp, err == nil
	}
	best, ok := sentRecord{}, false
	for _, r := range parseSlots(data) {
		if r.Seq > best.Seq && r.Channel == channel {
			best, ok = r, true
		}
	}
	return best.Checkpoint, ok
}

// The sent mark's file: sentSlots slots of sentSlot bytes.
const (
	sentSlot  = 4096
	sentSlots = 2
)

// sentRecord is a sent mark in its slot; Seq orders the slots (0: empty or
// damaged).
type sentRecord struct {
	Seq uint64 `json:"seq"`
	Checkpoint
}

// encodeSlot is r as its slot holds it, padded with zeros.
func (s *Store) encodeSlot(r sentRecord) ([]byte, error) {
	r.Saved = s.now().UTC()
	data, err := seal(r)
	if err != nil {
		return nil, err
	}
	if len(data) > sentSlot {
		return nil, fmt.Errorf("the sent mark of %s takes %d bytes, more than its slot's %d (a dump path that long?)", r.Channel, len(data), sentSlot)
	}
	return append(data, make([]byte, sentSlot-len(data))...), nil
}

// parseSlots reads every slot; a damaged one reads as Seq 0.
func parseSlots(data []byte) []sentRecord {
	slots := make([]sentRecord, sentSlots)
	for i := range slots {
		var r sentRecord
		if err := verify(bytes.TrimRight(data[i*sentSlot:(i+1)*sentSlot], "\x00"), "", &r); err == nil {
			slots[i] = r
		}
	}
	return slots
}

// openSent opens the sent mark's file for writing in place, and reads its
// slots. It returns a nil file when there is none to write in place (none
// yet, or one from before the slots).
func openSent(path string) (*os.File, []sentRecord, error) {
	f, err := OpenInPlace(path, sentSlot*sentSlots)
	if f == nil || err != nil {
		return nil, nil, err
	}
	data := make([]byte, sentSlot*sentSlots)
	if _, err := f.ReadAt(data, 0); err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, parseSlots(data), nil
}

// OpenInPlace opens a file of exactly size bytes to be overwritten in
// place, which needs no new block, so a full disk still takes the write. It
// returns a nil file when there is none of that size to reuse. It writes
// through nothing: a link, a file with other names (a hard link), anything
// but a regular file, or a file swapped in while opening is refused.
func OpenInPlace(path string, size int64) (*os.File, error) {
	st, err := os.Lstat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, err
	case !st.Mode().IsRegular():
		return nil, fmt.Errorf("%s is not a regular file (%s)", path, st.Mode().Type())
	case st.Size() != size:
		return nil, nil
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	fst, err := f.Stat()
	if err != nil || !os.SameFile(st, fst) {
		f.Close()
		return nil, fmt.Errorf("%s was replaced while opened", path)
	}
	if n, err := links(f); err != nil || n > 1 {
		f.Close()
		return nil, fmt.Errorf("%s has %d names (a hard link to a file elsewhere?): not written through (%v)", path, n, err)
	}
	if f, err = trustedFile(f, path); errors.Is(err, ErrUntrusted) {
		return nil, nil // planted: replaced by a new file of the shipper's
	}
	return f, err
}

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// CreateNew writes data to a new file at path and syncs it: whatever is at
// path (a link planted there included) is removed first, and the file is
// created exclusively, so nothing is written through a link.
func CreateNew(path string, data []byte) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
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

// readSealed reads a sealed file (see readRaw) and decodes it into v.
func (s *Store) readSealed(path string, v any) error {
	data, err := s.readRaw(path)
	if err != nil {
		return err
	}
	return verify(data, path, v)
}

// readRaw reads a state file: a regular file, never through a link, of at
// most MaxFileBytes; anything else is corrupt (and so set aside by Load).
func (s *Store) readRaw(path string) ([]byte, error) {
	data, err := readTrusted(path)
	switch {
	case errors.Is(err, ErrUntrusted):
		// Planted: as if absent, so the channel starts as with no state;
		// reported once a file.
		s.mu.Lock()
		first := !s.ignored[path]
		s.ignored[path] = true
		s.mu.Unlock()
		if first {
			s.untrusted(err.Error())
		}
		return nil, fmt.Errorf("%w: %w", os.ErrNotExist, err)
	case errors.Is(err, os.ErrNotExist):
		return nil, err
	case errors.Is(err, conffile.ErrNotRegular) || errors.Is(err, conffile.ErrTooLarge):
		return nil, fmt.Errorf("%w %s: %v", ErrCorrupt, path, err)
	}
	return data, err
}

// readTrusted reads a regular file at path, never through a link, and
// only if its owner is trusted (ErrUntrusted otherwise).
func readTrusted(path string) ([]byte, error) {
	f, err := conffile.OpenRegularNoFollow(path)
	if err != nil {
		return nil, err
	}
	if f, err = trustedFile(f, path); err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("cannot read: %w", err)
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("%w %d bytes", conffile.ErrTooLarge, MaxFileBytes)
	}
	return data, nil
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

// verify checks data's checksum and decodes its JSON into v.
func verify(data []byte, path string, v any) error {
	payload, sum, ok := bytes.Cut(bytes.TrimRight(data, "\n"), []byte("\ncrc32c:"))
	if !ok {
		return fmt.Errorf("%w %s: no checksum (truncated or overwritten)", ErrCorrupt, path)
	}
	if fmt.Sprintf("%08x", crc32.Checksum(payload, crcTable)) != string(sum) {
		return fmt.Errorf("%w %s: checksum mismatch", ErrCorrupt, path)
	}
	if err := json.Unmarshal(payload, v); err != nil {
		return fmt.Errorf("%w %s: %v", ErrCorrupt, path, err)
	}
	return nil
}
