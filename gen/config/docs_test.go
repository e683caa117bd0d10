package config

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// docs/config.md documents every field of the config and no field that does
// not exist: each row's first cell names paths as `a.b`, `a.{b,c}` or several
// of them; a path that is a struct (`shipper.resources`) covers its leaves.
func TestConfigDocCoversEveryField(t *testing.T) {
	raw, err := os.ReadFile("../../docs/config.md")
	if err != nil {
		t.Fatal(err)
	}
	code := regexp.MustCompile("`([^`]+)`")
	var documented []string
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "## ") {
			break // the field table ends where the first section begins
		}
		cells := strings.Split(line, "|")
		if len(cells) < 4 || strings.HasPrefix(strings.TrimSpace(cells[1]), "---") || strings.TrimSpace(cells[1]) == "Field" {
			continue
		}
		for _, m := range code.FindAllStringSubmatch(cells[1], -1) {
			documented = append(documented, expandBraces(m[1])...)
		}
	}
	leaves := fieldPaths(Config{})
	covers := func(doc, leaf string) bool { return leaf == doc || strings.HasPrefix(leaf, doc+".") }
	for _, leaf := range leaves {
		if !slices.ContainsFunc(documented, func(d string) bool { return covers(d, leaf) }) {
			t.Errorf("docs/config.md does not document %s", leaf)
		}
	}
	for _, d := range documented {
		if !slices.ContainsFunc(leaves, func(leaf string) bool { return covers(d, leaf) }) {
			t.Errorf("docs/config.md documents %s, which is not a config field", d)
		}
	}
	if len(documented) < len(leaves)/2 {
		t.Errorf("read only %d documented paths from docs/config.md", len(documented))
	}
}

// expandBraces turns "a.{b,c}" into "a.b", "a.c".
func expandBraces(s string) []string {
	open, end := strings.Index(s, "{"), strings.Index(s, "}")
	if open < 0 || end < open {
		return []string{s}
	}
	var out []string
	for _, alt := range strings.Split(s[open+1:end], ",") {
		out = append(out, s[:open]+strings.TrimSpace(alt)+s[end+1:])
	}
	return out
}
