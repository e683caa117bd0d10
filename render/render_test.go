package render

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type obj struct {
	Kind string            `json:"kind"`
	Data map[string]string `json:"data,omitempty"`
}

func sample() []File {
	long := strings.TrimSpace(strings.Repeat("max by (cluster, namespace, pod, container) (x) ", 5))
	return []File{
		{Path: "b/objects.yaml", Objects: []any{obj{Kind: "ConfigMap", Data: map[string]string{"expr": long}}, obj{Kind: "Secret"}}},
		{Path: "a/raw.json", Raw: []byte(`{"a":1}`)},
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestWriteAndDiff(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	sum, err := Write(dir, sample())
	if err != nil {
		t.Fatal(err)
	}
	if len(sum) != 3 || sum[0].Path != "a/raw.json" || sum[1].Path != "b/objects.yaml" || sum[1].Objects != 2 || sum[2].Path != KustomizationFile {
		t.Errorf("summary = %+v", sum)
	}
	k := read(t, filepath.Join(dir, KustomizationFile))
	if !strings.HasPrefix(k, Header) || !strings.Contains(k, "resources:\n  - b/objects.yaml\n") || strings.Contains(k, "raw.json") {
		t.Errorf("kustomization lists only object files:\n%s", k)
	}
	objs := read(t, filepath.Join(dir, "b/objects.yaml"))
	if strings.Count(objs, "\n---\n") != 1 || !strings.Contains(objs, "expr: max by (cluster, namespace, pod, container) (x) max by") {
		t.Errorf("objects are two documents with unfolded long strings:\n%s", objs)
	}
	if diffs, err := Diff(dir, sample()); err != nil || len(diffs) != 0 {
		t.Errorf("fresh output: diffs %v, err %v", diffs, err)
	}

	// Rewriting replaces the tree: stale files disappear.
	if err := os.WriteFile(filepath.Join(dir, "a/raw.json"), []byte("edited"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "stale.yaml"), nil, 0o644)
	diffs, _ := Diff(dir, sample())
	if got := strings.Join(diffs, ","); got != "changed: a/raw.json,extra:   stale.yaml" {
		t.Errorf("diffs = %q", got)
	}
	if _, err := Write(dir, sample()[:1]); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "stale.yaml")); !os.IsNotExist(err) {
		t.Error("stale file survived a rewrite")
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(dir), ".out.new-*"))
	if len(left) != 0 {
		t.Errorf("temporary trees left behind: %v", left)
	}
}

func TestWriteRefusesForeignDirectory(t *testing.T) {
	dir := t.TempDir()
	mine := filepath.Join(dir, "notes.txt")
	os.WriteFile(mine, []byte("keep me"), 0o644)
	if _, err := Write(dir, sample()); err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Fatalf("want a refusal, got %v", err)
	}
	if read(t, mine) != "keep me" {
		t.Error("a foreign file was touched")
	}
}

func TestEncodeRejectsBadFiles(t *testing.T) {
	for name, files := range map[string][]File{
		"absolute":  {{Path: "/etc/x", Raw: []byte{}}},
		"escape":    {{Path: "../x", Raw: []byte{}}},
		"unclean":   {{Path: "a//x", Raw: []byte{}}},
		"both":      {{Path: "x", Raw: []byte{}, Objects: []any{obj{}}}},
		"neither":   {{Path: "x"}},
		"duplicate": {{Path: "x", Raw: []byte{}}, {Path: "x", Raw: []byte{}}},
		"reserved":  {{Path: KustomizationFile, Raw: []byte{}}},
	} {
		if _, _, err := Encode(files); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
