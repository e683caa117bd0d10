package checkpoint

import (
	"errors"
	"os"
	"strings"
	"testing"
)

func store(t *testing.T) *Store {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSaveLoad(t *testing.T) {
	s := store(t)
	if _, found, _, err := s.Load("System"); found || err != nil {
		t.Fatalf("first start: found %v, err %v", found, err)
	}
	bm := "<BookmarkList>\r\n  <Bookmark Channel='System' RecordId='415060' IsCurrent='true'/>\r\n</BookmarkList>"
	for i, cp := range []Checkpoint{{Channel: "System", Bookmark: bm, RecordID: 415060}, {Channel: "System", Bookmark: bm, RecordID: 415061}} {
		if err := s.Save(cp); err != nil {
			t.Fatal(err)
		}
		got, found, note, err := s.Load("System")
		if err != nil || !found || note != "" || got.RecordID != cp.RecordID || got.Bookmark != bm {
			t.Fatalf("save %d: got %+v found %v note %q err %v", i, got, found, note, err)
		}
	}
	bak, err := read(s.Path("System")+".bak", "System")
	if err != nil || bak.RecordID != 415060 {
		t.Errorf("previous copy: %+v %v", bak, err)
	}
}

// Torn, zero-filled and foreign files are corrupt: set aside, reported, and
// replaced by the previous copy when it is valid.
func TestCorruptCheckpoints(t *testing.T) {
	for name, damage := range map[string]func([]byte) []byte{
		"truncated":   func(b []byte) []byte { return b[:len(b)/2] },
		"zero-filled": func(b []byte) []byte { return make([]byte, len(b)) },
		"bit flip":    func(b []byte) []byte { b[10] ^= 1; return b },
		"empty":       func([]byte) []byte { return nil },
	} {
		t.Run(name, func(t *testing.T) {
			s := store(t)
			s.Save(Checkpoint{Channel: "System", Offset: 100})
			s.Save(Checkpoint{Channel: "System", Offset: 200})
			path := s.Path("System")
			data, _ := os.ReadFile(path)
			os.WriteFile(path, damage(data), 0o600)

			if peek, ok := s.Peek("System"); !ok || peek.Offset != 100 {
				t.Fatalf("peek %+v %v", peek, ok)
			}
			if _, err := os.Stat(path); err != nil {
				t.Fatal("Peek moved the corrupt file")
			}
			cp, found, note, err := s.Load("System")
			if err != nil || !found || cp.Offset != 100 || !strings.Contains(note, "corrupt checkpoint") {
				t.Fatalf("got %+v found %v note %q err %v", cp, found, note, err)
			}
			aside, _ := os.ReadDir(s.dir)
			kept := false
			for _, e := range aside {
				kept = kept || strings.Contains(e.Name(), ".corrupt-")
			}
			if !kept {
				t.Error("the corrupt file was not kept aside")
			}

			// Both copies bad: an error for the policy to handle, never a silent start.
			s.Save(Checkpoint{Channel: "System", Offset: 300})
			for _, p := range []string{path, path + ".bak"} {
				os.WriteFile(p, []byte("garbage"), 0o600)
			}
			if _, _, _, err := s.Load("System"); !errors.Is(err, ErrCorrupt) {
				t.Errorf("both copies corrupt: err %v", err)
			}
		})
	}
}

func TestWrongChannel(t *testing.T) {
	s := store(t)
	s.Save(Checkpoint{Channel: "Application", Offset: 1})
	os.Rename(s.Path("Application"), s.Path("System"))
	if _, _, _, err := s.Load("System"); !errors.Is(err, ErrCorrupt) {
		t.Errorf("err %v", err)
	}
}

// A crash between Save's renames leaves only the previous copy.
func TestCrashBetweenRenames(t *testing.T) {
	s := store(t)
	s.Save(Checkpoint{Channel: "System", Offset: 1})
	s.Save(Checkpoint{Channel: "System", Offset: 2})
	os.Remove(s.Path("System"))
	cp, found, note, err := s.Load("System")
	if err != nil || !found || cp.Offset != 1 || note == "" {
		t.Errorf("got %+v %v %q %v", cp, found, note, err)
	}
}

// A checkpoint that cannot be written is an error, and the last good one
// stays (a directory in the way of the temp file fails even for root).
func TestFailedWriteKeepsCheckpoint(t *testing.T) {
	s := store(t)
	s.Save(Checkpoint{Channel: "System", Offset: 1})
	if err := os.Mkdir(s.Path("System")+".tmp", 0o700); err != nil {
		t.Fatal(err)
	}
	if err := s.Save(Checkpoint{Channel: "System", Offset: 2}); err == nil {
		t.Fatal("no error when the checkpoint cannot be written")
	}
	if cp, _, _, err := s.Load("System"); err != nil || cp.Offset != 1 {
		t.Errorf("after a failed save: %+v %v", cp, err)
	}
}
