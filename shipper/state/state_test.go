package state

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/winobs/winobs/internal/testkit/fixture"
	"github.com/winobs/winobs/shipper/lanes"
	"github.com/winobs/winobs/winname"
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
	bak, err := s.read(s.Path("System")+".bak", "System")
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
// stays (a non-empty directory in the way of the temp file fails even for
// root).
func TestFailedWriteKeepsCheckpoint(t *testing.T) {
	s := store(t)
	s.Save(Checkpoint{Channel: "System", Offset: 1})
	if err := os.MkdirAll(s.Path("System")+".tmp/full", 0o700); err != nil {
		t.Fatal(err)
	}
	if err := s.Save(Checkpoint{Channel: "System", Offset: 2}); err == nil {
		t.Fatal("no error when the checkpoint cannot be written")
	}
	if cp, _, _, err := s.Load("System"); err != nil || cp.Offset != 1 {
		t.Errorf("after a failed save: %+v %v", cp, err)
	}
}

// A hostile local user cannot make the checkpoint store write through a
// link, block on a pipe, or read a huge file: each is a corrupt checkpoint,
// set aside (the link itself, not its target), and the previous copy used.
func TestHostileCheckpointFiles(t *testing.T) {
	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, path string)
	}{
		{"symlink to a file", func(t *testing.T, path string) {
			target := filepath.Join(t.TempDir(), "target")
			os.WriteFile(target, []byte("precious"), 0o600)
			os.Remove(path)
			if err := os.Symlink(target, path); err != nil {
				t.Fatal(err)
			}
		}},
		{"symlink to /dev/zero", func(t *testing.T, path string) {
			os.Remove(path)
			os.Symlink("/dev/zero", path)
		}},
		{"FIFO", func(t *testing.T, path string) {
			os.Remove(path)
			if err := fixture.Mkfifo(path); err != nil {
				t.Skip(err)
			}
		}},
		{"1 GiB sparse file", func(t *testing.T, path string) {
			f, _ := os.Create(path)
			f.Truncate(1 << 30)
			f.Close()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := store(t)
			s.Save(Checkpoint{Channel: "System", RecordID: 1})
			s.Save(Checkpoint{Channel: "System", RecordID: 2})
			tc.plant(t, s.Path("System"))
			done := make(chan struct{})
			var cp Checkpoint
			var found bool
			var note string
			var err error
			go func() { cp, found, note, err = s.Load("System"); close(done) }()
			select {
			case <-done:
			case <-time.After(fixture.Patience):
				t.Fatal("Load blocked")
			}
			if err != nil || !found || cp.RecordID != 1 || !strings.Contains(note, "corrupt") {
				t.Errorf("got %+v found %v note %q err %v", cp, found, note, err)
			}
		})
	}
	// A link planted as the temporary file is replaced, its target untouched.
	s := store(t)
	target := filepath.Join(t.TempDir(), "target")
	os.WriteFile(target, []byte("precious"), 0o600)
	os.Symlink(target, s.Path("System")+".tmp")
	if err := s.Save(Checkpoint{Channel: "System", RecordID: 3}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); string(b) != "precious" {
		t.Errorf("the link's target was overwritten: %q", b)
	}
	if cp, found, _, err := s.Load("System"); err != nil || !found || cp.RecordID != 3 {
		t.Errorf("after the save: %+v %v %v", cp, found, err)
	}
}

// Channel names map to files one to one: names that the old mapping sent
// to one file get their own, plain names keep theirs, and a checkpoint
// under the old name is still found.
func TestCheckpointNamesAreInjective(t *testing.T) {
	s := store(t)
	names := []string{"System", "Microsoft-Windows-Sysmon/Operational", "Microsoft-Windows-Sysmon_Operational", "Microsoft-Windows-Sysmon Operational"}
	paths := map[string]string{}
	for i, n := range names {
		p := s.Path(n)
		if other, dup := paths[p]; dup {
			t.Errorf("%q and %q share %s", n, other, p)
		}
		paths[p] = n
		if err := s.Save(Checkpoint{Channel: n, RecordID: uint64(i + 1)}); err != nil {
			t.Fatal(err)
		}
	}
	for i, n := range names {
		if cp, found, note, err := s.Load(n); err != nil || !found || note != "" || cp.RecordID != uint64(i+1) {
			t.Errorf("%s: %+v %v %q %v", n, cp, found, note, err)
		}
	}
	if filepath.Base(s.Path("System")) != "System.checkpoint" {
		t.Errorf("a plain name changed its file: %s", s.Path("System"))
	}
	// A checkpoint written before the mapping was one to one.
	old := store(t)
	tmp := store(t)
	tmp.Save(Checkpoint{Channel: "Microsoft-Windows-Sysmon/Operational", RecordID: 9})
	data, _ := os.ReadFile(tmp.Path("Microsoft-Windows-Sysmon/Operational"))
	os.WriteFile(filepath.Join(old.dir, "Microsoft-Windows-Sysmon_Operational.checkpoint"), data, 0o600)
	if cp, found, _, err := old.Load("Microsoft-Windows-Sysmon/Operational"); err != nil || !found || cp.RecordID != 9 {
		t.Errorf("legacy file: %+v %v %v", cp, found, err)
	}
	if _, found, _, _ := old.Load("Microsoft-Windows-Sysmon_Operational"); found {
		t.Error("the legacy file was taken for the other channel")
	}
}

// The sent mark is kept apart from the checkpoint: saving it never moves
// the delivered position, and a missing or damaged one is simply absent.
func TestSentMark(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Sent("System"); ok {
		t.Fatal("a sent mark before any push")
	}
	if err := s.Save(Checkpoint{Channel: "System", Offset: 10}); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveSent(Checkpoint{Channel: "System", Offset: 99}); err != nil {
		t.Fatal(err)
	}
	if cp, _, _, _ := s.Load("System"); cp.Offset != 10 {
		t.Errorf("the checkpoint moved to %d", cp.Offset)
	}
	if sent, ok := s.Sent("System"); !ok || sent.Offset != 99 {
		t.Errorf("sent mark %+v %v", sent, ok)
	}
	if _, ok := s.Sent("Application"); ok {
		t.Error("another channel's sent mark")
	}
	os.WriteFile(s.sentPath("System"), []byte("garbage"), 0o600)
	if _, ok := s.Sent("System"); ok {
		t.Error("a damaged sent mark is used")
	}
}

// The sent mark is written in place once it exists, so a full disk, which
// refuses the temporary copies checkpoints are written through, still takes
// it; a torn write costs only the mark being written; a mark from before
// the slots is read and replaced; nothing is written through a link.
func TestSentMarkInPlace(t *testing.T) {
	type step struct {
		name string
		do   func(t *testing.T, s *Store, path string) error // the mark's save, after any damage
		want uint64                                          // RecordID read after; 0: none
	}
	save := func(id uint64) func(*testing.T, *Store, string) error {
		return func(_ *testing.T, s *Store, _ string) error {
			return s.SaveSent(Checkpoint{Channel: "System", RecordID: id, Bookmark: "<BookmarkList/>"})
		}
	}
	full := func(id uint64) func(*testing.T, *Store, string) error {
		return func(t *testing.T, s *Store, path string) error {
			os.MkdirAll(path+".tmp/full", 0o700) // no new file can be made there
			defer os.RemoveAll(path + ".tmp")
			return save(id)(t, s, path)
		}
	}
	tests := []struct {
		name    string
		steps   []step
		wantErr []bool
	}{
		{"first saves, then in place on a full disk", []step{
			{"first", save(5), 5}, {"second", save(9), 9}, {"full", full(12), 12}, {"full again", full(15), 15}, {"full thrice", full(20), 20},
		}, []bool{false, false, false, false, false}},
		{"the first save needs space", []step{
			{"full", full(5), 0}, {"space again", save(6), 6},
		}, []bool{true, false}},
		{"a torn write keeps the mark before it", []step{
			{"a", save(5), 5}, {"b", save(9), 9},
			{"torn", func(t *testing.T, s *Store, path string) error {
				f, _ := os.OpenFile(path, os.O_RDWR, 0)
				defer f.Close()
				_, err := f.WriteAt([]byte(`{"seq":3,"channel":"System","recordID":4`), 0) // slot 0 held seq 1: the older
				return err
			}, 9},
			{"then a save", save(11), 11},
		}, []bool{false, false, false, false}},
		{"both slots damaged: none", []step{
			{"a", save(5), 5}, {"b", save(9), 9},
			{"zeroed", func(t *testing.T, s *Store, path string) error {
				return os.WriteFile(path, make([]byte, sentSlot*sentSlots), 0o600)
			}, 0},
		}, []bool{false, false, false}},
		{"a mark from before the slots", []step{
			{"legacy", func(t *testing.T, s *Store, path string) error {
				data, _ := s.encode(Checkpoint{Channel: "System", RecordID: 7})
				return os.WriteFile(path, data, 0o600)
			}, 7},
			{"replaced", save(8), 8}, {"in place", full(10), 10},
		}, []bool{false, false, false}},
		{"a link is not written through", []step{
			{"link", func(t *testing.T, s *Store, path string) error {
				target := filepath.Join(t.TempDir(), "elsewhere")
				os.WriteFile(target, make([]byte, sentSlot*sentSlots), 0o600)
				if err := os.Symlink(target, path); err != nil {
					t.Skip(err)
				}
				err := save(3)(t, s, path)
				if data, _ := os.ReadFile(target); !bytes.Equal(data, make([]byte, sentSlot*sentSlots)) {
					t.Error("written through the link")
				}
				return err
			}, 0},
		}, []bool{true}},
		{"a hard link is not written through", []step{
			{"hard link", func(t *testing.T, s *Store, path string) error {
				target := filepath.Join(t.TempDir(), "elsewhere")
				os.WriteFile(target, make([]byte, sentSlot*sentSlots), 0o600)
				if err := os.Link(target, path); err != nil {
					t.Skip(err)
				}
				err := save(3)(t, s, path)
				if data, _ := os.ReadFile(target); !bytes.Equal(data, make([]byte, sentSlot*sentSlots)) {
					t.Error("written through the hard link")
				}
				return err
			}, 0},
		}, []bool{true}},
		{"another channel's slot is not this one's", []step{
			{"foreign", func(t *testing.T, s *Store, path string) error {
				data, _ := s.encodeSlot(sentRecord{Seq: 1, Checkpoint: Checkpoint{Channel: "Security", RecordID: 99}})
				return os.WriteFile(path, append(data, make([]byte, sentSlot)...), 0o600)
			}, 0},
		}, []bool{false}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := store(t)
			path := s.sentPath("System")
			for i, st := range tc.steps {
				err := st.do(t, s, path)
				if (err != nil) != tc.wantErr[i] {
					t.Fatalf("%s: error %v, want error %v", st.name, err, tc.wantErr[i])
				}
				got, ok := s.Sent("System")
				if (st.want != 0) != ok || got.RecordID != st.want {
					t.Fatalf("%s: sent mark %d (%v), want %d", st.name, got.RecordID, ok, st.want)
				}
				if ok && got.Bookmark != "" {
					t.Errorf("%s: the bookmark is kept in the slot", st.name)
				}
			}
		})
	}
}

// Lane plans survive as a checkpoint does: saved with their previous copy,
// read back after a crash between the renames, the previous copy used (and
// said) when the current one is damaged, an error when neither can be
// trusted, a plan out of order or over lanes.MaxLanes taken as damage; a
// whole-channel plan of an earlier version is read as the channel's plan.
func TestLanePlans(t *testing.T) {
	s := store(t)
	if p, note, err := s.Plans("Security"); !reflect.DeepEqual(p, lanes.Plans{}) || note != "" || err != nil {
		t.Fatalf("first start: %v %q %v", p, note, err)
	}
	first := lanes.Plans{Streams: map[string]lanes.Plan{"WINNODE01": {{From: 100, K: 2}}}}
	second := lanes.Plans{Streams: map[string]lanes.Plan{"WINNODE01": {{From: 100, K: 2}, {From: 900, K: 4}}, "WINNODE02": {{From: 950, K: 2}}}}
	for _, p := range []lanes.Plans{first, second} {
		if err := s.SavePlans("Security", p); err != nil {
			t.Fatal(err)
		}
	}
	path := s.lanesPath("Security")
	write := func(f planFile) {
		data, _ := seal(f)
		s.replace(path, "lane plan", data)
	}
	for _, tc := range []struct {
		name   string
		damage func()
		want   lanes.Plans
		note   bool
		err    bool
	}{
		{"saved", func() {}, second, false, false},
		{"crash between the renames", func() { os.Rename(path, path+".gone") }, first, false, false},
		{"current file torn", func() { os.WriteFile(path, []byte(`{"channel":"Security","streams":{"WINNODE01":[{"from":1`), 0o600) }, first, true, false},
		{"a plan out of order", func() {
			write(planFile{Channel: "Security", Plans: lanes.Plans{Streams: map[string]lanes.Plan{"A": {{From: 9, K: 2}, {From: 3, K: 2}}}}})
		}, second, true, false}, // the write made the good plan the previous copy
		{"more lanes than any config allows", func() {
			write(planFile{Channel: "Security", Plans: lanes.Plans{Streams: map[string]lanes.Plan{"A": {{From: 9, K: 1000}}}}})
		}, second, true, false},
		{"another channel's plan", func() { write(planFile{Channel: "System", Plans: first}) }, second, true, false},
		{"a whole-channel plan of an earlier version", func() {
			write(planFile{Channel: "Security", Whole: lanes.Plan{{From: 5, K: 7}}})
		}, lanes.Plans{All: lanes.Plan{{From: 5, K: 7}}}, false, false},
		{"missing, its previous copy damaged", func() {
			os.Remove(path)
			os.WriteFile(path+".bak", []byte("filled"), 0o600)
		}, lanes.Plans{}, false, true},
		{"both copies damaged", func() {
			os.WriteFile(path, []byte("zero"), 0o600)
			os.WriteFile(path+".bak", []byte("filled"), 0o600)
		}, lanes.Plans{}, false, true},
	} {
		os.Remove(path + ".gone")
		tc.damage()
		p, note, err := s.Plans("Security")
		if (err != nil) != tc.err || (note != "") != tc.note || !reflect.DeepEqual(p, tc.want) {
			t.Errorf("%s: plan %v, note %q, err %v; want %v, note %v, err %v", tc.name, p, note, err, tc.want, tc.note, tc.err)
		}
		if tc.err && !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v does not wrap ErrCorrupt", tc.name, err)
		}
		if err := s.SavePlans("Security", first); err != nil { // restore: current = first, previous copy = whatever was there
			t.Fatal(err)
		}
		if err := s.SavePlans("Security", second); err != nil {
			t.Fatal(err)
		}
	}
}

// A channel named like a Windows device (issue 51: NUL, con, COM1 and
// LPT9.log rendered) never names a file Windows would open as the device:
// every file the store writes for it (checkpoint, previous copy, sent mark,
// lane plans, their temporary copies) is checked under Windows' rules for
// the name before its first dot, and each channel keeps its own files.
func TestDeviceNamedChannelsGetFiles(t *testing.T) {
	s := store(t)
	names := []string{"NUL", "con", "Con", "AUX", "PRN", "COM1", "com9", "COM0", "LPT1", "LPT9.log", "lpt3.x.y", "CONIN$", "COM¹", "System"}
	plans := lanes.Plans{Streams: map[string]lanes.Plan{"WINNODE01": {{From: 100, K: 2}}}}
	for i, n := range names {
		for _, err := range []error{
			s.Save(Checkpoint{Channel: n, RecordID: uint64(i + 1)}),
			s.Save(Checkpoint{Channel: n, RecordID: uint64(i + 100)}),
			s.SaveSent(Checkpoint{Channel: n, RecordID: uint64(i + 100)}),
			s.SavePlans(n, plans),
		} {
			if err != nil {
				t.Fatalf("%s: %v", n, err)
			}
		}
	}
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) < 4*len(names) {
		t.Fatalf("%d files for %d channels", len(entries), len(names))
	}
	for _, e := range entries {
		if winname.Device(e.Name()) {
			t.Errorf("%s: Windows opens the device %s", e.Name(), strings.SplitN(e.Name(), ".", 2)[0])
		}
	}
	for i, n := range names {
		if cp, found, note, err := s.Load(n); err != nil || !found || note != "" || cp.RecordID != uint64(i+100) {
			t.Errorf("%s: %+v %v %q %v", n, cp, found, note, err)
		}
	}
	if filepath.Base(s.Path("System")) != "System.checkpoint" {
		t.Errorf("a plain name changed its file: %s", s.Path("System"))
	}
}

// Issue 58: the state directory is the shipper's own before any state in
// it is read. A link is refused (was: followed, another program's files
// replaced), as is a directory another account owns (was: trusted); a
// directory open to every account is closed (was: stayed drwxrwxrwx).
// Windows does the same with reparse points, owner SIDs and a protected
// DACL (owner_windows.go, built and vetted for Windows; not run here).
func TestStateDirectoryIsTheShippersOwn(t *testing.T) {
	base := t.TempDir()
	open := filepath.Join(base, "open")
	os.Mkdir(open, 0o777)
	os.Chmod(open, 0o777) // past the umask
	if _, err := Open(open); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(open); st.Mode().Perm() != 0o700 {
		t.Errorf("an open directory stays %v", st.Mode().Perm())
	}
	fresh := filepath.Join(base, "new", "state")
	if _, err := Open(fresh); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(fresh); st.Mode().Perm() != 0o700 {
		t.Errorf("a new directory is %v", st.Mode().Perm())
	}
	elsewhere := filepath.Join(base, "elsewhere")
	os.Mkdir(elsewhere, 0o700)
	link := filepath.Join(base, "linked")
	os.Symlink(elsewhere, link)
	if _, err := Open(link); err == nil || !strings.Contains(err.Error(), "not a link or a reparse point") || !strings.Contains(err.Error(), link) {
		t.Errorf("a linked state directory: %v", err)
	}
	if os.Geteuid() != 0 {
		t.Skip("giving a directory to another account needs root")
	}
	theirs := filepath.Join(base, "theirs")
	os.Mkdir(theirs, 0o777)
	os.Chmod(theirs, 0o777)
	os.Chown(theirs, 1234, 1234)
	_, err := Open(theirs)
	if !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), theirs+" is owned by uid 1234") || !strings.Contains(err.Error(), "remove the directory") {
		t.Errorf("a directory another account owns: %v", err)
	}
	if st, _ := os.Stat(theirs); st.Mode().Perm() != 0o777 {
		t.Errorf("a refused directory was changed: %v", st.Mode().Perm())
	}
}

// A state file another account owns (planted before the directory was
// closed; a checkpoint's checksum is no secret) is ignored as if absent,
// reported once, and replaced by the shipper's own on the next save: the
// checkpoint, its previous copy, the sent mark and the lane plans.
func TestPlantedStateFilesAreIgnored(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("planting a file of another account needs root")
	}
	honest := store(t)
	plans := lanes.Plans{Streams: map[string]lanes.Plan{"WINNODE01": {{From: 100, K: 4}}}}
	far := Checkpoint{Channel: "System", RecordID: 999999, Offset: 1 << 40}
	honest.Save(far)
	honest.Save(far)
	honest.SaveSent(far)
	honest.SavePlans("System", plans)

	s := store(t)
	var heard []string
	s.OnUntrusted(func(msg string) { heard = append(heard, msg) })
	entries, _ := os.ReadDir(honest.dir)
	for _, e := range entries {
		data, _ := os.ReadFile(filepath.Join(honest.dir, e.Name()))
		p := filepath.Join(s.dir, e.Name())
		os.WriteFile(p, data, 0o600)
		os.Chown(p, 1234, 1234)
	}
	for range 2 {
		if cp, found, _, err := s.Load("System"); found || err != nil {
			t.Errorf("a planted checkpoint was taken: %+v %v", cp, err)
		}
		if _, ok := s.Peek("System"); ok {
			t.Error("Peek took a planted checkpoint")
		}
		if _, ok := s.Sent("System"); ok {
			t.Error("a planted sent mark was taken")
		}
		if p, _, err := s.Plans("System"); err != nil || len(p.Streams) != 0 {
			t.Errorf("planted lane plans: %+v %v", p, err)
		}
	}
	if len(heard) != 4 || !strings.Contains(strings.Join(heard, "\n"), "System.checkpoint is owned by uid 1234") {
		t.Errorf("reported %d times (want each of 4 files once):\n%s", len(heard), strings.Join(heard, "\n"))
	}
	mine := Checkpoint{Channel: "System", RecordID: 7}
	if err := s.Save(mine); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveSent(mine); err != nil {
		t.Fatal(err)
	}
	if cp, ok := s.Sent("System"); !ok || cp.RecordID != 7 {
		t.Errorf("the shipper's own sent mark after a planted one: %+v %v", cp, ok)
	}
	if cp, found, _, err := s.Load("System"); !found || err != nil || cp.RecordID != 7 {
		t.Errorf("the shipper's own checkpoint: %+v %v %v", cp, found, err)
	}
}
