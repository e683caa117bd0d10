//go:build unix

package render

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A lock held on --out's parent by another process makes gen give up with
// an error naming it, not wait without end. (Any process that can open the
// directory can hold that lock.)
func TestLockHeldElsewhereIsAnError(t *testing.T) {
	parent := t.TempDir()
	d, err := os.Open(parent)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := syscall.Flock(int(d.Fd()), syscall.LOCK_EX); err != nil {
		t.Skip(err)
	}
	_, err = Options{LockWait: 300 * time.Millisecond}.Write(filepath.Join(parent, "out"), sample())
	if err == nil || !strings.Contains(err.Error(), "another process holds the lock") {
		t.Errorf("a held lock: %v", err)
	}
	if _, err := os.Stat(filepath.Join(parent, "out")); !os.IsNotExist(err) {
		t.Errorf("output written without the lock: %v", err)
	}
}
