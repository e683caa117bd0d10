// Command eventlog-shipper ships Windows event log channels, or wevtutil
// dumps, to Loki in the line format of Grafana Alloy, checkpointing only what
// Loki accepted.
//
//	eventlog-shipper --config FILE [--listen ADDR] [--state-dir DIR]
//	eventlog-shipper probe FILE live|ready  (exit 0 if the health file in the
//	                               state directory says so: the kubelet's exec
//	                               probe, which no connection held open to the
//	                               metrics port can starve)
//	eventlog-shipper probe URL    (exit 0 if URL answers 200, for a person)
//
// Exit status: 0 after a clean shutdown (or when every dump is delivered),
// 1 on a runtime failure, 2 on a usage or configuration error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/winobs/winobs/shipper/shipconfig"

	"github.com/winobs/winobs/conffile"
	"github.com/winobs/winobs/shipper"
)

// version is set at build time (images/eventlog-shipper/Dockerfile:
// -ldflags -X main.version=...).
var version = "dev"

const usage = `Usage:
  eventlog-shipper --config FILE [--listen ADDR] [--state-dir DIR]
      ship the configured event log channels and dumps to Loki
  eventlog-shipper probe FILE live|ready
      exit 0 if the health file (health.json in the state directory) was
      written within 30 s (live) and says ready (ready): the kubelet's exec
      probe, which connections held open to the metrics port cannot starve
  eventlog-shipper probe URL
      exit 0 if URL answers 200
  eventlog-shipper --version

Flags:
`

func main() {
	tuneGC()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// tuneGC collects less often than Go's default, which spends a tenth of the
// shipper's CPU on a heap of a few MiB, under a soft limit that keeps the
// process well inside its memory limit. GOGC and GOMEMLIMIT still win.
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(48 << 20)
	}
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 2 && args[0] == "probe" {
		return probe(args[1], stderr)
	}
	if len(args) == 3 && args[0] == "probe" && (args[2] == "live" || args[2] == "ready") {
		if err := shipper.CheckHealth(args[1], args[2] == "ready", time.Now()); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		return 0
	}
	fs := flag.NewFlagSet("eventlog-shipper", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {}
	configPath := fs.String("config", "", "YAML configuration file (required)")
	listen := fs.String("listen", "", "address for /metrics, /healthz and /readyz, overriding the file (default 127.0.0.1:9498)")
	stateDir := fs.String("state-dir", "", "checkpoint directory, overriding the file")
	showVersion := fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, usage)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return 0
	} else if err != nil {
		fmt.Fprint(stderr, usage)
		return 2
	}
	if *showVersion {
		fmt.Fprintln(stdout, "eventlog-shipper", version)
		return 0
	}
	if *configPath == "" || fs.NArg() > 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	cfg, err := shipconfig.Load(*configPath, shipconfig.Overrides{Listen: *listen, StateDir: *stateDir})
	if err != nil {
		fmt.Fprintf(stderr, "eventlog-shipper: %v\n", err)
		var probs conffile.Problems
		if errors.As(err, &probs) {
			return 2
		}
		return 1
	}
	s, err := shipper.New(cfg, log)
	if err != nil {
		fmt.Fprintf(stderr, "eventlog-shipper: %v\n", err)
		return 2
	}
	// SIGTERM from the kubelet; on Windows the console shutdown events
	// arrive as SIGTERM/SIGINT too.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log.Info("starting", "listen", cfg.Listen, "channels", len(cfg.Channels), "dumps", len(cfg.Dumps))
	if err := s.Run(ctx); err != nil {
		log.Error("stopped", "error", err)
		return 1
	}
	log.Info("stopped cleanly")
	return 0
}

func probe(url string, stderr io.Writer) int {
	c := http.Client{Timeout: 3 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintln(stderr, resp.Status)
		return 1
	}
	return 0
}
