package conffile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrLink is what ReadConfig refuses: a config path that is a link leaving
// its own directory, or into a hidden entry.
var ErrLink = errors.New("symbolic link refused")

// maxLinkHops bounds a chain of links, as the kernel does (ELOOP at 40).
const maxLinkHops = 40

// ReadConfig reads a configuration file as ReadFile does, except for where a
// symbolic link may lead. A config is often written by someone other than
// who runs the program (gen --check runs on pull requests, and git stores
// links), so a link at the path is followed only while every hop stays in
// the directory that holds it and names no hidden entry (.git, .netrc,
// .env): a Kubernetes ConfigMap mount (winobs.yaml -> ..data/winobs.yaml,
// ..data -> ..2026_12_04_…) passes; a link to ~/.netrc, /proc/self/environ
// or .git/config is refused before a byte of it is read. The directories
// leading to the path are the operator's and resolve as usual.
func ReadConfig(path string, max int64) ([]byte, error) {
	real, err := containedTarget(path)
	if err != nil {
		return nil, err
	}
	return readFile(real, max, false)
}

// containedTarget resolves the links of path's last element under the
// policy of ReadConfig and returns the file it names.
func containedTarget(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("cannot read: %w", err)
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if err != nil {
		return "", fmt.Errorf("cannot read: %w", err)
	}
	rest := []string{filepath.Base(abs)}
	for hops := 0; len(rest) > 0; {
		next := filepath.Join(dir, rest[0])
		rest = rest[1:]
		st, err := os.Lstat(next)
		if err != nil {
			return "", fmt.Errorf("cannot read: %w", err)
		}
		if st.Mode()&os.ModeSymlink == 0 {
			dir = next
			continue
		}
		if hops++; hops > maxLinkHops {
			return "", fmt.Errorf("cannot read: more than %d links in a chain", maxLinkHops)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", fmt.Errorf("cannot read: %w", err)
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(dir, target)
		}
		rel, err := filepath.Rel(dir, filepath.Clean(target))
		if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return "", fmt.Errorf("%w: it leads out of its own directory (to %s); give the file's own path", ErrLink, Printable(Excerpt(target)))
		}
		parts := strings.Split(rel, string(filepath.Separator))
		for _, p := range parts {
			// Kubernetes' atomic writer names its entries "..data" and
			// "..<timestamp>"; a single leading dot is a hidden file.
			if strings.HasPrefix(p, ".") && !strings.HasPrefix(p, "..") {
				return "", fmt.Errorf("%w: it leads into the hidden entry %s; give the file's own path", ErrLink, Printable(Excerpt(p)))
			}
		}
		rest = append(parts, rest...)
	}
	return dir, nil
}
