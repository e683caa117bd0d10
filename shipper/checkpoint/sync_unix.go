//go:build !windows

package checkpoint

import (
	"os"
	"syscall"
)

// openNoFollow refuses a link at the path and does not block on a pipe.
const openNoFollow = syscall.O_NOFOLLOW | syscall.O_NONBLOCK

// syncDir makes the renames durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
