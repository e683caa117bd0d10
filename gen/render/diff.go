package render

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sort"
)

// Diff compares dir with what Write would write and returns one line per
// file that is missing, extra or different; none means dir is fresh.
func Diff(dir string, files []File) ([]string, error) {
	want, _, err := Encode(files)
	if err != nil {
		return nil, err
	}
	var diffs []string
	seen := map[string]bool{}
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		seen[rel] = true
		w, ok := want[rel]
		if !ok {
			diffs = append(diffs, "extra:   "+rel)
			return nil
		}
		got, err := readRegular(p)
		if err != nil {
			diffs = append(diffs, "changed: "+rel+" ("+err.Error()+")")
			return nil
		}
		if !bytes.Equal(got, w) {
			diffs = append(diffs, "changed: "+rel)
		}
		return nil
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	for p := range want {
		if !seen[p] {
			diffs = append(diffs, "missing: "+p)
		}
	}
	sort.Strings(diffs)
	return diffs, nil
}
