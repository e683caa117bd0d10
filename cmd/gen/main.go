// Command gen renders the winobs bundle (rules, dashboards, agents and their
// manifests) from one configuration.
//
//	go run ./cmd/gen [--config FILE] [--out DIR] [--check]
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
	"text/tabwriter"

	"github.com/winobs/winobs/bundle"
	"github.com/winobs/winobs/config"
	"github.com/winobs/winobs/render"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "YAML file overriding the embedded default configuration")
	out := fs.String("out", "out", "output directory, replaced as a whole")
	check := fs.Bool("check", false, "compare the output directory with a fresh render instead of writing; exit 1 if it differs")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "gen: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if err := render.CheckOutDir(*out); err != nil {
		fmt.Fprintf(stderr, "gen: %v\n", err)
		return 2
	}

	cfg, err := config.Load(*configPath)
	if err != nil {
		fmt.Fprintf(stderr, "gen: %v\n", err)
		var probs config.Problems
		if errors.As(err, &probs) {
			return 2
		}
		return 1
	}
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
	return 0
}

func checkFresh(dir string, files []render.File, stdout, stderr io.Writer) int {
	diffs, err := render.Diff(dir, files)
	if err != nil {
		fmt.Fprintf(stderr, "gen: checking %s: %v\n", dir, err)
		return 1
	}
	if len(diffs) > 0 {
		fmt.Fprintf(stderr, "gen: %s is stale; run `make generate` and commit the result:\n", dir)
		for _, d := range diffs {
			fmt.Fprintf(stderr, "  %s\n", d)
		}
		return 1
	}
	fmt.Fprintf(stdout, "%s is up to date\n", dir)
	return 0
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
