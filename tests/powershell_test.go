package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/winobs/winobs"
	"github.com/winobs/winobs/gen/bundle"
	"github.com/winobs/winobs/gen/config"
)

// The PowerShell the bundle runs on every node (the exporter's firewall
// step, the directories step before Alloy and the exporter), parsed by
// tree-sitter's PowerShell grammar (tests/powershell, README there). No
// PowerShell runs here: this proves the text is PowerShell a parser
// accepts, not what the cmdlets do. The runbooks' blocks are not held to
// it: the grammar refuses valid PowerShell they use (1MB, arguments
// separated by commas).

type psSource struct {
	Name   string `json:"name"`
	Source string `json:"source"`
}

type psResult struct {
	Name   string   `json:"name"`
	Errors []string `json:"errors"`
}

func TestPowerShellParses(t *testing.T) {
	node, dir := powershellHarness(t)
	var sources []psSource
	for _, file := range []string{"", filepath.Join("second", "config.yaml")} {
		cfg, err := config.Load(file) // "": the embedded default
		if err != nil {
			t.Fatal(err)
		}
		sources = append(sources, bundleScripts(t, cfg, file)...)
	}
	// Both steps are among them: a test that found no script would pass.
	for _, want := range []string{"configure-firewall", "secure-directories"} {
		found := false
		for _, s := range sources {
			found = found || strings.Contains(s.Name, "/"+want)
		}
		if !found {
			t.Errorf("no %s step rendered: the test reads nothing", want)
		}
	}
	t.Logf("%d rendered steps", len(sources))

	for _, r := range parsePowerShell(t, node, dir, sources) {
		if len(r.Errors) > 0 {
			t.Errorf("%s does not parse as PowerShell:\n  %s", r.Name, strings.Join(r.Errors, "\n  "))
		}
	}
}

// The harness finds what a PowerShell parser refuses (so a pass means
// something): an unclosed condition, a quote left open, a brace missing.
func TestPowerShellHarnessRefusesBrokenScripts(t *testing.T) {
	node, dir := powershellHarness(t)
	broken := []psSource{
		{"unclosed condition", "if ($x -eq 1 { 'a' }"},
		{"open quote", "$name = 'winobs\nWrite-Output $name"},
		{"missing brace", "foreach ($a in $b) { if ($a) { $a }"},
		{"go-quoted", `$x = "a" + ` + "`" + `"b"` + ` +`},
	}
	for _, r := range parsePowerShell(t, node, dir, broken) {
		if len(r.Errors) == 0 {
			t.Errorf("%s: the parser found nothing wrong", r.Name)
		}
	}
}

// bundleScripts are the PowerShell scripts of every container the bundle
// starts with powershell.exe -Command.
func bundleScripts(t *testing.T, cfg *config.Config, name string) []psSource {
	t.Helper()
	files, err := bundle.Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if name == "" {
		name = "default"
	}
	var out []psSource
	for _, f := range files {
		for _, o := range f.Objects {
			ds, ok := o.(*appsv1.DaemonSet)
			if !ok {
				continue
			}
			spec := ds.Spec.Template.Spec
			for _, c := range append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...) {
				if len(c.Command) > 2 && strings.EqualFold(c.Command[0], "powershell.exe") && c.Command[len(c.Command)-2] == "-Command" {
					out = append(out, psSource{Name: fmt.Sprintf("%s: %s/%s", name, ds.Name, c.Name), Source: c.Command[len(c.Command)-1]})
				}
			}
		}
	}
	return out
}

func parsePowerShell(t *testing.T, node, dir string, sources []psSource) []psResult {
	t.Helper()
	in, err := json.Marshal(sources)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, filepath.Join(dir, "parse.cjs"))
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("parse.cjs: %v\n%s", err, tail(stderr.String(), 2000))
	}
	var out []psResult
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("parse.cjs output: %v", err)
	}
	if len(out) != len(sources) {
		t.Fatalf("parse.cjs answered %d of %d sources", len(out), len(sources))
	}
	return out
}

// The harness's package.json and lockfile pin the grammar versions.json
// names.
func TestPowerShellHarnessPinsTheGrammar(t *testing.T) {
	npmPins(t, "powershell", map[string]string{"tree-sitter-powershell": winobs.Pinned().PowerShellGrammar})
}

// powershellHarness returns node and the PowerShell harness's directory
// (nodeHarness; make test sets WINOBS_REQUIRE_POWERSHELL after npm ci).
func powershellHarness(t *testing.T) (node, dir string) {
	t.Helper()
	return nodeHarness(t, "powershell", filepath.Join("tree-sitter-powershell", "tree-sitter-powershell.wasm"), "WINOBS_REQUIRE_POWERSHELL", "make powershell-harness")
}
