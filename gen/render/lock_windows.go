//go:build windows

package render

import (
	"errors"
	"os"
	"path/filepath"

	"golang.org/x/sys/windows"
)

// lockParent holds an exclusive lock until unlock, so two gen runs into the
// same --out take turns. Windows cannot lock a directory handle, so the
// lock is on an empty file beside the output, .<out>.lock, which stays.
func lockParent(parent, base string, waitFor func(try func() (bool, error)) error) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(parent, "."+base+".lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := waitFor(func() (bool, error) {
		err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, new(windows.Overlapped))
		if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
			return false, nil
		}
		return err == nil, err
	}); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil // closing the handle unlocks
}
