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

// ARCHITECTURE.md matches the code: every function its data-path diagrams
// name (config.Read, bundle.Build, …) exists in the package of that name,
// and every path it names in backquotes exists.
func TestArchitectureNamesWhatExists(t *testing.T) {
	doc, err := os.ReadFile("ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	dirs := map[string][]string{} // package name -> directories
	filepath.WalkDir(".", func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && !strings.HasPrefix(d.Name(), ".") && d.Name() != "node_modules" && d.Name() != "testdata" {
			dirs[d.Name()] = append(dirs[d.Name()], p)
		}
		return nil
	})
	diagram := regexp.MustCompile("(?s)```\n(.*?)```").FindAllStringSubmatch(string(doc), -1)
	call := regexp.MustCompile(`\b([a-z]+)\.([A-Z][A-Za-z]*)\b`)
	checked := 0
	for _, block := range diagram {
		for _, m := range call.FindAllStringSubmatch(block[1], -1) {
			found := false
			for _, dir := range dirs[m[1]] {
				files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
				for _, f := range files {
					b, _ := os.ReadFile(f)
					found = found || regexp.MustCompile(`(func (\([^)]*\) )?|type )`+m[2]+`\b`).Match(b)
				}
			}
			if !found {
				t.Errorf("ARCHITECTURE.md's diagram names %s.%s, which the code does not have", m[1], m[2])
			}
			checked++
		}
	}
	for _, m := range regexp.MustCompile("`((?:[a-z]+/)+[a-z_.]*)`").FindAllStringSubmatch(string(doc), -1) {
		if _, err := os.Stat(strings.TrimSuffix(m[1], "/")); err != nil && !strings.Contains(m[1], "*") {
			t.Errorf("ARCHITECTURE.md names %s, which does not exist", m[1])
		}
		checked++
	}
	if checked < 20 {
		t.Errorf("only %d names checked: the patterns no longer match the document", checked)
	}
}
