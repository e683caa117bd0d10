// Command gen renders the winobs bundle (rules, dashboards, agents and their
// manifests) from one configuration.
//
//	go run ./cmd/gen [--config FILE] [--out DIR] [--check]
//	go run ./cmd/gen init [--config FILE] [--loki-url URL] ...
//	go run ./cmd/gen doctor --prometheus URL [--loki URL] [--config FILE]
//	go run ./cmd/gen azure-settings --config FILE --current FILE [--out FILE]
//
// The flow is: load the config (embedded default overridden by FILE) and
// validate it completely, build every artifact in memory, then write the tree
// in one swap. Exit status: 0 done, 1 build/write failure or stale output
// (--check), 2 usage or configuration error.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/winobs/winobs/gen/bundle"
	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/gen/render"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `Usage:
  gen [--config FILE] [--out DIR] [--check]   render the bundle (default: the built-in example)
  gen init [flags]                            write a config for your cluster to start from
  gen doctor --prometheus URL [--loki URL]    check that winobs works in your cluster
  gen azure-settings --current FILE           merge winobs's ama-metrics settings into the cluster's (Azure Monitor)
  gen help                                    this text

Run "gen init --help", "gen doctor --help" or "gen --help" for their flags.
`

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "init":
			return runInit(args[1:], stdout, stderr)
		case "doctor":
			return runDoctor(args[1:], stdout, stderr)
		case "azure-settings":
			return runAzureSettings(args[1:], stdout, stderr)
		case "help":
			fmt.Fprint(stdout, usage)
			return 0
		}
	}
	return runRender(args, stdout, stderr)
}

// parseFlags parses args; asked for help, it prints the flags to stdout and
// says to exit 0.
func parseFlags(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (code int, ok bool) {
	fs.SetOutput(stderr)
	fs.Usage = func() {}
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(stdout)
		fmt.Fprint(stdout, usage+"\nFlags of gen "+strings.TrimPrefix(fs.Name(), "gen")+":\n")
		fs.PrintDefaults()
		return 0, false
	case err != nil:
		fmt.Fprintln(stderr, "gen: run \"gen help\" for the usage")
		return 2, false
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "gen: unexpected arguments %q\n", fs.Args())
		return 2, false
	}
	return 0, true
}

func runRender(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	configPath := fs.String("config", "", "YAML file overriding the embedded default configuration (gen init writes one)")
	out := fs.String("out", "out", "output directory, replaced as a whole")
	check := fs.Bool("check", false, "compare the output directory with a fresh render instead of writing; exit 1 if it differs")
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	if err := render.CheckOutDir(*out); err != nil {
		fmt.Fprintf(stderr, "gen: %v\n", err)
		return 2
	}

	cfg, warnings, err := config.Read(*configPath)
	if err != nil {
		return configFailed(stderr, "gen", err)
	}
	printWarnings(stderr, *configPath, warnings)
	files, err := bundle.Build(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "gen: %v\n", err)
		return 1
	}
	if *check {
		return checkFresh(*out, files, stdout, stderr)
	}
	sum, err := render.Write(*out, files)
	if err != nil {
		fmt.Fprintf(stderr, "gen: writing %s: %v\n", *out, err)
		if errors.Is(err, render.ErrObjectTooLarge) {
			return 2 // the configuration asks for more than Kubernetes takes
		}
		return 1
	}
	printSummary(stdout, *out, sum)
	// What each channel forwards, and from where: a user's channel keeps
	// the default sets' filters beside it unless eventLog.sets says not.
	fmt.Fprintln(stdout, "event log channels (both agents):")
	for _, line := range cfg.EventLog.Describe() {
		fmt.Fprintf(stdout, "  %s\n", line)
	}
	return 0
}

// configFailed reports a config that could not be used: exit 2 when it is
// the configuration's fault (every problem listed), 1 otherwise.
func configFailed(stderr io.Writer, cmd string, err error) int {
	fmt.Fprintf(stderr, "%s: %v\n", cmd, err)
	var probs config.Problems
	if errors.As(err, &probs) {
		return 2
	}
	return 1
}

func checkFresh(dir string, files []render.File, stdout, stderr io.Writer) int {
	diffs, err := render.Diff(dir, files)
	if err != nil {
		fmt.Fprintf(stderr, "gen: checking %s: %v\n", dir, err)
		return 1
	}
	if len(diffs) > 0 {
		again := "gen --out " + dir + " with the same --config"
		if c := filepath.ToSlash(filepath.Clean(dir)); c == "manifests" || c == "tests/second/bundle" {
			again += "; in the winobs repository: make generate" // its committed renders
		}
		fmt.Fprintf(stderr, "gen: %s is stale; render it again (%s):\n", dir, again)
		for _, d := range diffs {
			fmt.Fprintf(stderr, "  %s\n", d)
		}
		return 1
	}
	fmt.Fprintf(stdout, "%s is up to date\n", dir)
	return 0
}

// printWarnings says what is legal but probably wrong; rendering the
// built-in example says so first, loudly.
func printWarnings(w io.Writer, configPath string, warnings config.Problems) {
	if configPath == "" {
		fmt.Fprintln(w, "gen: WARNING: no --config: rendering the built-in example, the reference lab of docs/; its addresses are not your cluster's.")
		fmt.Fprintln(w, "gen:          Start your own with: go run ./cmd/gen init --config winobs.yaml, then render with --config winobs.yaml.")
	}
	for _, p := range warnings {
		fmt.Fprintf(w, "gen: warning: %v\n", p)
	}
}

func printSummary(w io.Writer, dir string, sum render.Summary) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	objects, bytes := 0, 0
	fmt.Fprintln(tw, "objects\tbytes\t  file")
	for _, e := range sum {
		fmt.Fprintf(tw, "%d\t%d\t  %s\n", e.Objects, e.Bytes, e.Path)
		objects += e.Objects
		bytes += e.Bytes
	}
	tw.Flush()
	fmt.Fprintf(w, "wrote %d files, %d Kubernetes objects, %d bytes to %s\n", len(sum), objects, bytes, dir)
}
