package winobs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The README stays a quick start (what to run, what is rendered, where to
// read on), and every relative link in the project's documents reaches a
// file that exists, so moving a document cannot leave a reader at a 404.
func TestDocsLinkAndStayShort(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(readme), "\n"); n > 200 {
		t.Errorf("README.md has %d lines: keep it a quick start (≤ 200) and move the rest to docs/", n)
	}
	docs, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files := append([]string{"README.md", "ARCHITECTURE.md", "testdata/README.md", "tests/grafana/README.md"}, docs...)
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	// Code is not prose: PowerShell's [math]::Round($_.Size/1GB) is no link.
	code := regexp.MustCompile("(?s)```.*?```|`[^`\n]*`")
	checked := 0
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(code.ReplaceAllString(string(raw), ""), -1) {
			target, _, _ := strings.Cut(m[1], "#")
			if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			checked++
			if _, err := os.Stat(filepath.Join(filepath.Dir(f), target)); err != nil {
				t.Errorf("%s links to %s, which does not exist", f, m[1])
			}
		}
	}
	if checked < 20 {
		t.Errorf("checked only %d links", checked)
	}
}
