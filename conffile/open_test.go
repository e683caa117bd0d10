package conffile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/winobs/winobs/internal/testkit/fixture"
)

// Only regular files are read, and refusing the others never blocks: a
// FIFO (whose open waits for a writer), a device, a directory.
func TestOpenRegularRefusesWithoutBlocking(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := fixture.Mkfifo(fifo); err != nil {
		t.Skip(err)
	}
	link := filepath.Join(dir, "zero")
	os.Symlink("/dev/zero", link)
	for _, path := range []string{fifo, link, "/dev/null", dir} {
		done := make(chan error, 1)
		go func() { _, err := ReadFile(path, 1<<20); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("%s: %v", path, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: blocked", path)
		}
	}
	file := filepath.Join(dir, "secret")
	os.WriteFile(file, []byte("s3cret"), 0o600)
	if b, err := ReadFile(file, 1<<20); err != nil || string(b) != "s3cret" {
		t.Errorf("a regular file: %q %v", b, err)
	}
	if _, err := ReadFile(file, 3); err == nil || !strings.Contains(err.Error(), "larger than 3 bytes") {
		t.Errorf("bounded: %v", err)
	}
}
