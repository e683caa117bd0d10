package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkGenBuild reports what a user's first `go run ./cmd/gen` costs:
// the CPU-seconds of `go build ./cmd/gen` with an empty build cache (the
// standard library included; modules already downloaded), then with the
// cache warm, and the wall time of one render once built.
func BenchmarkGenBuild(b *testing.B) {
	if _, err := exec.LookPath("go"); err != nil {
		b.Skip("no go command")
	}
	bin := filepath.Join(b.TempDir(), "gen")
	cache := b.TempDir()
	build := func() float64 {
		cmd := exec.Command("go", "build", "-o", bin, ".")
		cmd.Env = append(os.Environ(), "GOCACHE="+cache)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("go build: %v\n%s", err, out)
		}
		// The rusage of a waited-for process includes the compilers and
		// the linker it waited for.
		return (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	}
	var cold, warm, render float64
	for b.Loop() {
		os.RemoveAll(cache)
		cold = build()
		warm = build()
		out := filepath.Join(b.TempDir(), "out")
		start := time.Now()
		if code := run([]string{"--out", out}, io.Discard, io.Discard); code != 0 {
			b.Fatalf("render: exit %d", code)
		}
		render = time.Since(start).Seconds()
	}
	b.ReportMetric(cold, "cold_build_cpu_s")
	b.ReportMetric(warm, "warm_build_cpu_s")
	b.ReportMetric(render*1000, "render_ms")
}
