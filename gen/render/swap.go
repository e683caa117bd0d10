package render

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// incompleteMarker sits in a temporary tree until it is complete; a tree
// left by a killed run is recognised by it and removed by the next run.
const incompleteMarker = ".winobs-incomplete"

// Write replaces dir with exactly the given files. The tree is built next to
// dir and swapped in only when complete. A non-empty dir that winobs did not
// generate is refused, so a wrong --out cannot delete someone's files.
func Write(dir string, files []File) (Summary, error) {
	return Options{}.Write(dir, files)
}

// Options are how Write swaps; the zero value is gen's. Tests set them
// (as Prometheus' rules.ManagerOptions carries a manager's dependencies)
// rather than package variables, so they may run side by side.
type Options struct {
	// LockWait bounds how long Write waits for the lock on the output's
	// parent (DefaultLockWait when zero): any process that can open that
	// directory can hold it, and gen must not hang without a word.
	LockWait time.Duration
	// Rename moves a directory (os.Rename when nil); a test makes it answer
	// EBUSY as a mount point does.
	Rename func(from, to string) error
	// Hook, when set, runs at the named moments of a swap (before-swap,
	// before-remove, staged), so a test can play a writer racing gen.
	Hook func(stage string)
}

// DefaultLockWait is Options.LockWait's default.
const DefaultLockWait = 30 * time.Second

// Write is the package's Write, with these options.
func (o Options) Write(dir string, files []File) (Summary, error) {
	data, sum, err := Encode(files)
	if err != nil {
		return nil, err
	}
	if err := CheckOutDir(dir); err != nil {
		return nil, err
	}
	parent, base := filepath.Split(filepath.Clean(dir))
	if parent == "" {
		parent = "."
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, err
	}
	unlock, err := lockParent(parent, base, o.waitFor)
	if err != nil {
		return nil, fmt.Errorf("locking %s for the swap: %w", parent, err)
	}
	defer unlock()
	if err := ownedOrAbsent(dir); err != nil {
		return nil, err
	}
	removeStale(parent, base)
	tmp, err := os.MkdirTemp(parent, "."+base+".new-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp) // a no-op once swapped in
	if err := os.WriteFile(filepath.Join(tmp, incompleteMarker), nil, 0o644); err != nil {
		return nil, err
	}
	for p, b := range data {
		full := filepath.Join(tmp, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(full, b, 0o644); err != nil {
			return nil, err
		}
	}
	if err := os.Remove(filepath.Join(tmp, incompleteMarker)); err != nil {
		return nil, err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return nil, err
	}
	return sum, o.swap(tmp, dir)
}

// CheckOutDir refuses output directories that can only be mistakes: empty,
// the current directory or one of its parents, or the root.
func CheckOutDir(dir string) error {
	c := filepath.Clean(dir)
	if dir == "" || c == "." || filepath.Base(c) == ".." || c == filepath.VolumeName(c)+string(filepath.Separator) {
		return fmt.Errorf("--out %q: name a directory of its own (such as out), not the current directory, a parent or the root", dir)
	}
	return nil
}

// removeStale deletes temporary trees that a killed run left next to the
// output: named like ours and marked incomplete, or a previous output set
// aside during a swap that still matches its record.
func removeStale(parent, base string) {
	left, _ := filepath.Glob(filepath.Join(parent, "."+base+".new-*"))
	for _, d := range left {
		if fi, err := os.Lstat(d); err != nil || !fi.IsDir() {
			continue
		}
		if m, err := os.Lstat(filepath.Join(d, incompleteMarker)); err == nil && m.Mode().IsRegular() {
			os.RemoveAll(d)
		} else if _, err := os.Lstat(filepath.Join(d, RecordFile)); err == nil && ownedOrAbsent(d) == nil {
			_ = removeOwned(d)
		}
	}
}

func (o Options) hook(stage string) {
	if o.Hook != nil {
		o.Hook(stage)
	}
}

func (o Options) rename(from, to string) error {
	if o.Rename != nil {
		return o.Rename(from, to)
	}
	return os.Rename(from, to)
}

// swap moves the complete tree tmp to dir. The previous dir was checked
// before rendering, but a file may have been written into it since: so it
// is moved aside first (no path reaches it then), checked again against
// its record, and put back untouched if it holds anything gen did not
// write. It is then removed file by file, each file's hash checked as it
// goes, so what appears even later is kept and named, never deleted.
func (o Options) swap(tmp, dir string) error {
	o.hook("before-swap")
	old := tmp + ".old"
	if err := o.rename(dir, old); errors.Is(err, os.ErrNotExist) {
		if err := os.Rename(tmp, dir); err != nil {
			return fmt.Errorf("moving the new output in place: %w", err)
		}
		return nil
	} else if errors.Is(err, syscall.EBUSY) {
		return o.swapInto(tmp, dir)
	} else if err != nil {
		return fmt.Errorf("moving the previous output aside: %w", err)
	}
	if err := ownedOrAbsent(old); err != nil {
		if rerr := os.Rename(old, dir); rerr != nil {
			return fmt.Errorf("%w; and the previous output could not be put back from %s: %v", err, old, rerr)
		}
		return fmt.Errorf("%s changed while gen ran: %w", dir, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if rerr := os.Rename(old, dir); rerr != nil {
			return fmt.Errorf("moving the new output in place: %w; and the previous output could not be put back from %s: %v", err, old, rerr)
		}
		return fmt.Errorf("moving the new output in place: %w", err)
	}
	o.hook("before-remove")
	return removeOwned(old)
}

// waitFor retries try (true: locked) until it succeeds, fails, or
// LockWait passes.
func (o Options) waitFor(try func() (bool, error)) error {
	lockWait := o.LockWait
	if lockWait == 0 {
		lockWait = DefaultLockWait
	}
	deadline := time.Now().Add(lockWait)
	for {
		ok, err := try()
		if ok || err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("another process holds the lock on the directory (another gen writing the same --out?); gave up after %v", lockWait)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// swapInto replaces the contents of dir, a directory that cannot be moved
// (a mount point: a CI volume, an emptyDir, docker -v), with tmp's. tmp is
// beside dir, most likely on another filesystem, so the new tree is first
// copied whole into a staging directory inside dir (a full disk or any
// error stops here, the previous output untouched); only then are the
// previous output's files removed as removeOwned removes them, keeping dir,
// and the staged entries moved up (same filesystem), the record last. Not
// atomic, as a mount point cannot be: a run killed in between leaves the
// directory for the next run to complete.
func (o Options) swapInto(tmp, dir string) error {
	removeStaleStages(dir)
	if err := ownedOrAbsent(dir); err != nil {
		return fmt.Errorf("%s changed while gen ran: %w", dir, err)
	}
	stage, err := os.MkdirTemp(dir, stagePrefix)
	if err != nil {
		return fmt.Errorf("staging the new output in %s (the previous one is untouched): %w", dir, err)
	}
	defer os.RemoveAll(stage)
	if err := os.WriteFile(filepath.Join(stage, incompleteMarker), nil, 0o644); err != nil {
		return fmt.Errorf("staging the new output in %s (the previous one is untouched): %w", dir, err)
	}
	if err := copyTree(tmp, stage); err != nil {
		return fmt.Errorf("staging the new output in %s (the previous one is untouched): %w", dir, err)
	}
	o.hook("staged")
	if err := clearOwned(dir, filepath.Base(stage)); err != nil {
		return err
	}
	entries, err := os.ReadDir(stage)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Name() == RecordFile || e.Name() == incompleteMarker {
			continue // the record last: a complete tree is the one with its record
		}
		if err := os.Rename(filepath.Join(stage, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("moving the new output into %s: %w", dir, err)
		}
	}
	return os.Rename(filepath.Join(stage, RecordFile), filepath.Join(dir, RecordFile))
}

// stagePrefix names the staging directory swapInto makes inside a mount.
const stagePrefix = ".winobs-staged-"

// removeStaleStages removes staging directories a killed run left inside
// dir: named like ours and still marked incomplete.
func removeStaleStages(dir string) {
	left, _ := filepath.Glob(filepath.Join(dir, stagePrefix+"*"))
	for _, d := range left {
		if m, err := os.Lstat(filepath.Join(d, incompleteMarker)); err == nil && m.Mode().IsRegular() {
			os.RemoveAll(d)
		}
	}
}

// copyTree copies the tree gen wrote in from (directories and regular
// files) into to.
func copyTree(from, to string) error {
	return filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil || p == from {
			return err
		}
		rel, err := filepath.Rel(from, p)
		if err != nil {
			return err
		}
		target := filepath.Join(to, rel)
		if d.IsDir() {
			return os.Mkdir(target, 0o755)
		}
		b, err := readRegular(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
}
