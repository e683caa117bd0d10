//go:build unix

package render

import (
	"errors"
	"os"
	"syscall"
)

// lockParent holds an exclusive lock on the directory that holds the
// output until unlock, so two gen runs into the same --out take turns
// instead of setting each other's trees aside (a lock on the directory
// itself leaves no lock file behind in the user's tree).
func lockParent(parent, _ string, waitFor func(try func() (bool, error)) error) (unlock func(), err error) {
	d, err := os.Open(parent)
	if err != nil {
		return nil, err
	}
	if err := waitFor(func() (bool, error) {
		err := syscall.Flock(int(d.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return false, nil
		}
		return err == nil, err
	}); err != nil {
		d.Close()
		return nil, err
	}
	return func() { d.Close() }, nil // closing the last descriptor unlocks
}
