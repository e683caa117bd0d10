package winobs_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/winobs/winobs/contract"
	"github.com/winobs/winobs/gen/vocab"
	"github.com/winobs/winobs/internal/testkit/fixture"
)

// builderPackages render the artifact families, each from its view.
var builderPackages = []string{"gen/rules", "gen/dashboards", "gen/alloy", "gen/exporters", "gen/shipperdeploy", "gen/nodeagent", "gen/managed/azuremonitor", "gen/managed/amp", "gen/managed/gmp"}

// Every builder takes its view of the config (package view), never the
// whole config: a builder's signature says what reaches its artifact.
func TestBuildersTakeAView(t *testing.T) {
	for _, pkg := range builderPackages {
		fset := token.NewFileSet()
		matches, _ := filepath.Glob(filepath.Join(pkg, "*.go"))
		read := 0
		for _, path := range matches {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			read++
			ast.Inspect(f, func(n ast.Node) bool {
				star, ok := n.(*ast.StarExpr)
				if !ok {
					return true
				}
				if sel, ok := star.X.(*ast.SelectorExpr); ok && sel.Sel.Name == "Config" {
					if id, ok := sel.X.(*ast.Ident); ok && id.Name == "config" {
						t.Errorf("%s: %s takes the whole *config.Config; give it a view (package view)", fset.Position(star.Pos()), pkg)
					}
				}
				return true
			})
		}
		if read == 0 {
			t.Errorf("no Go files in %s", pkg)
		}
	}
}

// Dependencies point one way: gen links the shipper's config schema and its
// manifest builder, never the shipper's runtime (Loki client, snappy); the
// shipper links no Kubernetes module and none of gen's builder libraries.
func TestBinariesLinkOnlyWhatTheyNeed(t *testing.T) {
	deps := func(pkg string) []string {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		return strings.Fields(string(out))
	}
	allowedShipper := map[string]bool{"github.com/winobs/winobs/shipper/shipconfig": true}
	for _, d := range deps("./cmd/gen") {
		shipper := d == "github.com/winobs/winobs/shipper" || strings.HasPrefix(d, "github.com/winobs/winobs/shipper/")
		if shipper && !allowedShipper[d] || d == "github.com/golang/snappy" {
			t.Errorf("cmd/gen links %s", d)
		}
	}
	// The config knows nothing of what is built from it (ARCHITECTURE.md).
	for _, d := range deps("./gen/config") {
		for _, builder := range append(slices.Clone(builderPackages), "gen/view", "gen/bundle", "gen/render", "shipper") {
			if d == "github.com/winobs/winobs/"+builder || strings.HasPrefix(d, "github.com/winobs/winobs/"+builder+"/") {
				t.Errorf("config links %s", d)
			}
		}
	}
	// Rules and dashboards are siblings over package vocab: neither links the other.
	for pkg, other := range map[string]string{"./gen/dashboards": "github.com/winobs/winobs/gen/rules", "./gen/rules": "github.com/winobs/winobs/gen/dashboards"} {
		if slices.Contains(deps(pkg), other) {
			t.Errorf("%s links %s", pkg, other)
		}
	}
	for _, goos := range []string{"linux", "windows"} {
		cmd := exec.Command("go", "list", "-deps", "./cmd/eventlog-shipper")
		cmd.Env = append(cmd.Environ(), "GOOS="+goos)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		for _, d := range strings.Fields(string(out)) {
			for _, banned := range []string{"k8s.io/", "sigs.k8s.io/", "github.com/winobs/winobs/gen/config", "github.com/prometheus/prometheus/",
				"github.com/prometheus-operator/", "github.com/grafana/grafana-foundation-sdk/", "github.com/grafana/alloy/"} {
				if strings.HasPrefix(d, banned) {
					t.Errorf("eventlog-shipper (%s) links %s", goos, d)
				}
			}
		}
	}
}

// The house's layout (ARCHITECTURE.md): what only gen uses lives under
// gen/, the shipper's under shipper/, and a package at the top level is
// one both binaries link; the managed Prometheus table is a leaf config
// and view can read; vocab is fed by view alone (it reads no config); no
// production package imports a test kit.
func TestLayering(t *testing.T) {
	list := func(args ...string) map[string][]string {
		out, err := exec.Command("go", append([]string{"list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %v: %v\n%s", args, err, out)
		}
		pkgs := map[string][]string{}
		for line := range strings.Lines(string(out)) {
			f := strings.Fields(line)
			pkgs[strings.TrimSuffix(strings.TrimPrefix(f[0]+"/", module), "/")] = f[1:] // the root: ""
		}
		return pkgs
	}
	deps := func(pkg string) map[string]bool {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		set := map[string]bool{}
		for _, d := range strings.Fields(string(out)) {
			set[strings.TrimPrefix(d, module)] = true
		}
		return set
	}
	gen, shipper := deps("./cmd/gen"), deps("./cmd/eventlog-shipper")
	top := 0
	for pkg, imports := range list("./...") {
		first, _, _ := strings.Cut(pkg, "/")
		switch first {
		case "", "cmd", "gen", "shipper", "internal", "tests", "scripts", "images":
		default:
			top++
			if !gen[pkg] || !shipper[pkg] {
				t.Errorf("%s sits at the top level, but gen links it: %v, the shipper: %v; a package one binary uses lives under its folder", pkg, gen[pkg], shipper[pkg])
			}
		}
		for _, imp := range imports {
			own := strings.TrimPrefix(imp, module)
			if own == imp {
				continue
			}
			switch {
			case strings.HasPrefix(own, "internal/testkit/") && first != "internal" && first != "tests":
				t.Errorf("%s (production code) imports the test kit %s", pkg, own)
			case first == "gen" && (own == "shipper" || strings.HasPrefix(own, "shipper/")) && own != "shipper/shipconfig":
				t.Errorf("%s imports the shipper's runtime %s (gen reads shipper/shipconfig alone)", pkg, own)
			case first == "shipper" && strings.HasPrefix(own, "gen/"):
				t.Errorf("%s imports gen's %s", pkg, own)
			case pkg == "gen/managed":
				t.Errorf("the managed table imports %s: it must stay a leaf that config and view read", own)
			}
		}
	}
	if top < 4 {
		t.Errorf("read only %d top-level packages", top)
	}
	if d := deps("./gen/vocab"); d["gen/config"] {
		t.Error("vocab links config: view routes what it needs (vocab.Settings)")
	}
}

// module is this module's import path, with its slash.
const module = "github.com/winobs/winobs/"

// The names that cross a process boundary are spelled once, in package
// contract: no other non-test Go file holds winobs's own as a string (struct tags and
// the keys of log calls are not names another process reads; the Loki model
// and the Alloy line's field names are kept apart on purpose), and contract
// imports nothing of winobs's.
func TestOnlyContractSpellsTheNames(t *testing.T) {
	// The event stream's labels that winobs's agents make (job, namespace,
	// pod and container are everyone's words), winobs's metrics, and the
	// Loki alerts' names (the detections' names were once written twice).
	names := map[string]bool{}
	for _, n := range []string{contract.LabelNode, contract.LabelChannel, contract.LabelComputer, contract.LabelStream, contract.LabelLane, contract.MetaLogMonitor, contract.MetaEventID} {
		names[strconv.Quote(n)] = true
	}
	for _, m := range append(slices.Clone(contract.ShipperMetrics), contract.LokiAlerts...) {
		names[strconv.Quote(m)] = true
	}
	exempt := []string{"contract/", "internal/testkit/lokitest/", "shipper/eventxml/", "tests/", "internal/testkit/logqlcheck/"}
	logCall := map[string]bool{"Debug": true, "Info": true, "Warn": true, "Error": true, "With": true}
	checked := walkSources(t, exempt, func(path string, f *ast.File) {
		skip := map[ast.Node]bool{}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.Field:
				if n.Tag != nil {
					skip[n.Tag] = true
				}
			case *ast.CallExpr:
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok && logCall[sel.Sel.Name] {
					for _, a := range n.Args {
						skip[a] = true
					}
				}
			case *ast.BasicLit:
				if n.Kind == token.STRING && names[n.Value] && !skip[n] {
					t.Errorf("%s spells %s: use package contract's name", path, n.Value)
				}
			}
			return true
		})
	})
	if checked < 50 {
		t.Errorf("read only %d files", checked)
	}
	out, err := exec.Command("go", "list", "-deps", "./contract").CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, d := range strings.Fields(string(out)) {
		if strings.HasPrefix(d, "github.com/winobs/winobs/") && d != "github.com/winobs/winobs/contract" {
			t.Errorf("contract imports %s: it must stay a leaf every part can read", d)
		}
	}
}

// walkSources parses every non-test Go file of the repository outside
// exempt (path prefixes), node_modules and testdata, and returns how many.
func walkSources(t *testing.T, exempt []string, visit func(path string, f *ast.File)) int {
	t.Helper()
	checked := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") ||
			slices.ContainsFunc(exempt, func(p string) bool { return strings.HasPrefix(path, p) }) {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		checked++
		visit(path, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return checked
}

// Every windows_exporter metric name the rules, dashboards and doctor read
// is spelled once, in vocab.Metrics, with the releases that serve it: no
// other non-test Go file holds one in a string (a template writes
// $[FieldName]), so the next rename is one edit.
func TestOnlyVocabSpellsExporterMetrics(t *testing.T) {
	v := reflect.ValueOf(vocab.Metrics)
	var names []string
	for i := range v.NumField() {
		names = append(names, regexp.QuoteMeta(v.Field(i).String()))
		if !strings.HasPrefix(v.Field(i).String(), "windows_") {
			t.Errorf("vocab.Metrics.%s = %q is not a windows_exporter name", v.Type().Field(i).Name, v.Field(i).String())
		}
	}
	spelt := regexp.MustCompile(`\b(` + strings.Join(names, "|") + `)\b`)
	// internal/testkit/fixture reads the recorded exporter name lists, which hold
	// them as recorded; the check below holds vocab to those recordings.
	checked := walkSources(t, []string{"gen/vocab/metrics.go", "tests/", "internal/testkit/fixture/"}, func(path string, f *ast.File) {
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if m := spelt.FindString(lit.Value); m != "" {
					t.Errorf("%s spells %s: use vocab.Metrics (a template: $[field])", path, m)
				}
			}
			return true
		})
	})
	if checked < 50 {
		t.Errorf("read only %d files", checked)
	}
	// Every name is one a recorded exporter serves (0.31.8's list, or the
	// legacy names the rules read after an or).
	known := fixture.KnownMetrics(t)
	for i := range v.NumField() {
		if _, ok := known[v.Field(i).String()]; !ok {
			t.Errorf("vocab.Metrics.%s = %q: no recorded windows_exporter serves it", v.Type().Field(i).Name, v.Field(i).String())
		}
	}
	for _, name := range []string{vocab.Metrics.MemoryCommitLimit, vocab.Metrics.BootTime030} {
		if vocab.Metrics.Versions(name) == contract.ExporterRange {
			t.Errorf("%s: its rename is not recorded in vocab.MetricVersions", name)
		}
	}
}
