//go:build windows

package checkpoint

// syncDir is a no-op: NTFS journals the rename itself, and Windows cannot
// fsync a directory handle opened by os.Open.
func syncDir(string) error { return nil }

// openNoFollow is 0: Windows has no such open flag; readRegular's Lstat
// before and SameFile after opening refuse a link or a swapped file.
const openNoFollow = 0
