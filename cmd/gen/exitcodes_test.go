package main

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The commands in the README and docs/ that document an exit code call the
// built binary (go run reports every failure as 1), and the binary's codes
// are the documented ones: 2 for a config error, 1 for a stale --out and for
// a failing doctor, 0 for an up-to-date --out.
func TestDocumentedExitCodesSurvive(t *testing.T) {
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	exitComment := regexp.MustCompile(`#.*\b[012] [a-z]`)
	n := 0
	for _, name := range append([]string{"../../README.md"}, docs...) {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		sc, inShell := bufio.NewScanner(f), false
		for line := 1; sc.Scan(); line++ {
			l := sc.Text()
			if strings.HasPrefix(l, "```") {
				inShell = l == "```sh"
				continue
			}
			if inShell && exitComment.MatchString(l) {
				n++
				if !strings.HasPrefix(l, "bin/gen ") {
					t.Errorf("%s:%d documents exit codes but does not call bin/gen: %s", filepath.Base(name), line, l)
				}
			}
		}
		f.Close()
	}
	if n < 2 {
		t.Errorf("the README and docs document exit codes on %d commands; want the --check and doctor ones", n)
	}

	bin := filepath.Join(t.TempDir(), "gen")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("namespace: Not_A_Name\n"), 0o644)
	out := filepath.Join(dir, "out")
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"--config", bad, "--out", out}, 2},
		{[]string{"--out", out, "--check"}, 1}, // nothing rendered yet
		{[]string{"--out", out}, 0},
		{[]string{"--out", out, "--check"}, 0},
		{[]string{"doctor", "--prometheus", "http://127.0.0.1:1", "--timeout", "5s"}, 1},
		{[]string{"doctor"}, 2},
	} {
		cmd := exec.Command(bin, tc.args...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		// A user's stale --out is rendered again with gen, not with the
		// repository's make generate (which writes manifests/).
		if strings.Contains(stderr.String(), "make generate") {
			t.Errorf("gen %s suggests make generate for %s:\n%s", strings.Join(tc.args, " "), out, stderr.String())
		}
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tc.want {
			t.Errorf("gen %s: exit %d, want %d", strings.Join(tc.args, " "), code, tc.want)
		}
	}
}
