package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestGenWritesBundle(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--out", out}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, f := range []string{"kustomization.yaml", "rules/winobs-windows-alerts.yaml", "prometheus/winobs-windows-records.yaml", "ruler/mimir/winobs-windows.yaml", "ruler/loki/winobs-windows-events.yaml"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	if !strings.Contains(stdout.String(), "wrote 20 files, 16 Kubernetes objects") {
		t.Errorf("summary:\n%s", stdout.String())
	}
	if code := run([]string{"--out", out, "--check"}, &stdout, &stderr); code != 0 {
		t.Errorf("--check after a write: exit %d: %s", code, stderr.String())
	}
}

// The bad input: a threshold above 1, a negative duration and an
// unknown key, all reported, exit 2, previous output untouched.
func TestGenBadConfigLeavesOutputUntouched(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--out", out}, &stdout, &stderr); code != 0 {
		t.Fatal(stderr.String())
	}
	before, _ := os.ReadFile(filepath.Join(out, "rules/winobs-windows-alerts.yaml"))
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("alerts:\n  nodeCommit:\n    warning: 1.2\n    for: -5m\n  bogus: true\n"), 0o644)
	stderr.Reset()
	if code := run([]string{"--config", bad, "--out", out}, &stdout, &stderr); code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	for _, want := range []string{
		bad + ":3: alerts.nodeCommit.warning: must be a ratio",
		bad + ":4: alerts.nodeCommit.for: must be a non-negative duration",
		bad + ":5: alerts.bogus: unknown field",
	} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	after, _ := os.ReadFile(filepath.Join(out, "rules/winobs-windows-alerts.yaml"))
	if !bytes.Equal(before, after) {
		t.Error("a failed run changed the output")
	}
}

func TestGenCheckReportsStale(t *testing.T) {
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--out", out, "--check"}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "missing: kustomization.yaml") {
		t.Errorf("exit %d:\n%s", code, stderr.String())
	}
}

func TestGenUsage(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"extra"}, &stdout, &stderr); code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
	if code := run([]string{"--nope"}, &stdout, &stderr); code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
}
