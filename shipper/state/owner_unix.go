//go:build !windows

package state

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// openDir opens dir itself: O_NOFOLLOW refuses a symbolic link.
func openDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_DIRECTORY, 0)
	if errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.ENOTDIR) {
		return nil, errors.New("a link or not a directory")
	}
	return f, err
}

// owner is the open file's owner, trusted when it is root or the
// shipper's own user.
func owner(f *os.File) (who string, trusted bool, err error) {
	st, err := f.Stat()
	if err != nil {
		return "", false, err
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return "", false, errors.New("no owner in the file's status")
	}
	return fmt.Sprintf("uid %d", sys.Uid), sys.Uid == 0 || int(sys.Uid) == os.Geteuid(), nil
}

// protect closes the directory to every other account.
func protect(f *os.File) error { return f.Chmod(0o700) }
