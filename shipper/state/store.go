package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"sync"
	"time"

	"github.com/winobs/winobs/conffile"
)

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

// seal is v as JSON followed by its checksum, which verify checks.
func seal(v any) ([]byte, error) {
	payload, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return fmt.Appendf(payload, "\ncrc32c:%08x\n", crc32.Checksum(payload, crcTable)), nil
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
