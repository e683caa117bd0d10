//go:build windows

package checkpoint

// syncDir is a no-op: NTFS journals the rename itself, and Windows cannot
// fsync a directory handle opened by os.Open.
func syncDir(string) error { return nil }
