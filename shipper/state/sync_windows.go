//go:build windows

package state

import (
	"os"
	"syscall"
)

// syncDir is a no-op: NTFS journals the rename itself, and Windows cannot
// fsync a directory handle opened by os.Open.
func syncDir(string) error { return nil }

// links is how many names an open file has (os.Stat on Windows does not
// say): more than one is a hard link, which a planted name can make to a
// file elsewhere.
func links(f *os.File) (uint64, error) {
	var info syscall.ByHandleFileInformation
	if err := syscall.GetFileInformationByHandle(syscall.Handle(f.Fd()), &info); err != nil {
		return 0, err
	}
	return uint64(info.NumberOfLinks), nil
}
