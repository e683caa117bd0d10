//go:build ignore

// Command alloyharness runs winobs's rendered Alloy config through Alloy's
// own code. It is built inside a scratch copy of Alloy's module (its
// packages are internal), by tests/alloy/build.sh, which drops the build
// constraint; winobs's own go build, vet and mod tidy skip it (ignore).
//
//	alloyharness validate config.alloy
//	    parse, format check and `alloy validate` (every component's
//	    arguments decoded and type-checked against Alloy's registry)
//	alloyharness process config.alloy LABEL N < entries.jsonl > out.jsonl
//	    run the config's loki.process LABEL block, built as Alloy builds it,
//	    on the entries (one JSON object a line: line, labels, ts) and print
//	    the first N entries it forwards (line, labels, metadata, ts), in the
//	    order it forwards them
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/grafana/alloy/syntax/ast"
	"github.com/grafana/alloy/syntax/parser"
	"github.com/grafana/alloy/syntax/printer"
	"github.com/grafana/alloy/syntax/vm"
	"github.com/grafana/loki/pkg/push"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"

	"github.com/grafana/alloy/internal/component"
	"github.com/grafana/alloy/internal/component/common/loki"
	_ "github.com/grafana/alloy/internal/component/discovery/kubernetes"
	_ "github.com/grafana/alloy/internal/component/discovery/relabel"
	_ "github.com/grafana/alloy/internal/component/local/file_match"
	"github.com/grafana/alloy/internal/component/loki/process"
	_ "github.com/grafana/alloy/internal/component/loki/source/file"
	_ "github.com/grafana/alloy/internal/component/loki/source/windowsevent"
	_ "github.com/grafana/alloy/internal/component/loki/write"
	"github.com/grafana/alloy/internal/featuregate"
	"github.com/grafana/alloy/internal/service/livedebugging"
	"github.com/grafana/alloy/internal/validator"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: alloyharness validate FILE | process FILE LABEL N")
		os.Exit(2)
	}
	src, err := os.ReadFile(os.Args[2])
	if err != nil {
		fail(err)
	}
	switch {
	case os.Args[1] == "validate":
		err = validate(os.Args[2], src)
	case os.Args[1] == "process" && len(os.Args) == 5:
		var n int
		if n, err = strconv.Atoi(os.Args[4]); err == nil {
			err = runProcess(src, os.Args[3], n, os.Stdin, os.Stdout)
		}
	default:
		err = errors.New("unknown command")
	}
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "alloyharness:", err)
	os.Exit(1)
}

// validate parses the file, checks that Alloy's formatter leaves it as it
// is, and runs Alloy's validator with its default component registry.
func validate(name string, src []byte) error {
	f, err := parser.ParseFile(name, src)
	if err != nil {
		return fmt.Errorf("parse: %w", err)
	}
	var out bytes.Buffer
	if err := printer.Fprint(&out, f); err != nil {
		return err
	}
	if out.String() != string(src) && out.String()+"\n" != string(src) {
		return fmt.Errorf("alloy fmt would change %s:\n%s", name, out.String())
	}
	opts := validator.Options{
		Sources:           map[string][]byte{name: src},
		ComponentRegistry: component.NewDefaultRegistry(featuregate.StabilityGenerallyAvailable, false),
		MinStability:      featuregate.StabilityGenerallyAvailable,
	}
	if err := validator.Validate(opts); err != nil {
		var b bytes.Buffer
		validator.Report(&b, err, opts.Sources)
		return fmt.Errorf("validation failed:\n%s", b.String())
	}
	return nil
}

// entry is one log entry in and out of the harness.
type entry struct {
	Line     string            `json:"line"`
	Labels   map[string]string `json:"labels"`
	Metadata map[string]string `json:"metadata,omitempty"`
	TS       time.Time         `json:"ts"`
}

// patience bounds the wait for an entry that never comes (one the pipeline
// dropped): only a failing run waits it out.
const patience = 2 * time.Minute

// runProcess decodes the loki.process block as Alloy's runtime does (its
// body evaluated against a scope where forward_to's receiver is ours),
// builds the component with process.New, and feeds it the entries.
func runProcess(src []byte, label string, n int, in io.Reader, out io.Writer) error {
	f, err := parser.ParseFile("config.alloy", src)
	if err != nil {
		return err
	}
	var block *ast.BlockStmt
	for _, stmt := range f.Body {
		if b, ok := stmt.(*ast.BlockStmt); ok && b.GetBlockName() == "loki.process" && b.Label == label {
			block = b
		}
	}
	if block == nil {
		return fmt.Errorf("no loki.process %q", label)
	}
	collector := loki.NewLogsReceiver()
	receiver := map[string]any{"receiver": collector}
	scope := vm.NewScope(map[string]any{"loki": map[string]any{"write": map[string]any{"default": receiver}}})
	var args process.Arguments
	if err := vm.New(block.Body).Evaluate(scope, &args); err != nil {
		return fmt.Errorf("decoding loki.process %q: %w", label, err)
	}
	opts := component.Options{
		ID:         "loki.process." + label,
		Logger:     slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Registerer: prometheus.NewRegistry(),
		GetServiceData: func(name string) (any, error) {
			if name == livedebugging.ServiceName {
				return livedebugging.NewLiveDebugging(), nil
			}
			return nil, fmt.Errorf("service %s not available", name)
		},
	}
	var exports process.Exports
	opts.OnStateChange = func(e component.Exports) { exports = e.(process.Exports) }
	c, err := process.New(opts, args)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go c.Run(ctx)

	var entries []loki.Entry
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return fmt.Errorf("input: %w", err)
		}
		ls := model.LabelSet{}
		for k, v := range e.Labels {
			ls[model.LabelName(k)] = model.LabelValue(v)
		}
		entries = append(entries, loki.Entry{Labels: ls, Entry: push.Entry{Timestamp: e.TS, Line: e.Line}})
	}
	if err := sc.Err(); err != nil {
		return err
	}
	go func() {
		for _, e := range entries {
			exports.Receiver.Chan() <- e
		}
	}()
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	timeout := time.After(patience)
	for i := 0; i < n; i++ {
		var got loki.Entry
		select {
		case got = <-collector.Chan():
		case <-timeout:
			return fmt.Errorf("forwarded %d of %d entries in %s", i, n, patience)
		}
		e := entry{Line: got.Line, Labels: map[string]string{}, TS: got.Timestamp.UTC()}
		for k, v := range got.Labels {
			e.Labels[string(k)] = string(v)
		}
		for _, m := range got.StructuredMetadata {
			if e.Metadata == nil {
				e.Metadata = map[string]string{}
			}
			e.Metadata[m.Name] = m.Value
		}
		if err := enc.Encode(e); err != nil {
			return err
		}
	}
	return nil
}
