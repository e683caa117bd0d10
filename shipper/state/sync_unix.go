//go:build !windows

package state

import (
	"os"
	"syscall"
)

// syncDir makes the renames durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// links is how many names an open file has: more than one is a hard link,
// which a planted name can make to a file elsewhere.
func links(f *os.File) (uint64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return uint64(sys.Nlink), nil
	}
	return 1, nil
}
