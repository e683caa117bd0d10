package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/winobs/winobs"
	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/gen/dashboards"
	"github.com/winobs/winobs/gen/view"
)

// The dashboards through Grafana's own frontend code (tests/grafana, README
// there): every rendered dashboard is loaded into scene objects, its variables
// are set to several states, and the queries Grafana's data sources hand to
// Grafana's backend are parsed back here and held to what the user chose.

// harnessInput is what tests/grafana/harness.cjs reads.
type harnessInput struct {
	Dashboards []harnessDashboard  `json:"dashboards"`
	Labels     map[string][]string `json:"labels"`
	// LokiLabels are Loki's label values where they differ from Labels.
	LokiLabels map[string][]string `json:"lokiLabels,omitempty"`
	States     []harnessState      `json:"states"`
}

type harnessDashboard struct {
	File  string          `json:"file"`
	Model json.RawMessage `json:"model"`
}

// harnessState sets variables by name: a list of values, or "$__all".
type harnessState struct {
	Name string         `json:"name"`
	Set  map[string]any `json:"set,omitempty"`
	// URL opens the dashboard from a link carrying these query parameters
	// (var-cluster=…), applied before the variables load.
	URL string `json:"url,omitempty"`
}

// harnessResult is one dashboard in one state, as the harness reports it.
type harnessResult struct {
	Dashboard string `json:"dashboard"`
	State     string `json:"state"`
	Variables []struct {
		Name       string   `json:"name"`
		Type       string   `json:"type"`
		Value      any      `json:"value"`
		Options    []string `json:"options"`
		IsMulti    bool     `json:"isMulti"`
		IncludeAll bool     `json:"includeAll"`
		AllValue   *string  `json:"allValue"`
		Query      *string  `json:"query"`
		DependsOn  []string `json:"dependsOn"`
	} `json:"variables"`
	Targets []struct {
		Panel      string            `json:"panel"`
		RefID      string            `json:"refId"`
		Local      map[string]string `json:"local"`
		Template   string            `json:"template"`
		Datasource string            `json:"datasource"`
	} `json:"targets"`
	Sent []harnessSent `json:"sent"`
}

// harnessSent is one request a data source made of Grafana's backend.
type harnessSent struct {
	Tag struct {
		Phase    string `json:"phase"`
		Variable string `json:"variable"`
		Panel    string `json:"panel"`
	} `json:"tag"`
	Kind       string `json:"kind"`
	RefID      string `json:"refId"`
	Datasource string `json:"datasource"`
	Expr       string `json:"expr"`
	Label      string `json:"label"`
	Variable   string `json:"variable"`
	Match      any    `json:"match"`
	Error      string `json:"error"`
}

// grafanaHarness runs the harness on in.
func grafanaHarness(t *testing.T, in harnessInput) []harnessResult {
	t.Helper()
	node, dir := harnessAvailable(t)
	body, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, "harness.cjs")
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(body)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("harness: %v\n%s", err, tail(stderr.String(), 4000))
	}
	var out []harnessResult
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("harness output: %v", err)
	}
	return out
}

// harnessAvailable returns node and the Grafana harness's directory
// (nodeHarness; make test sets WINOBS_REQUIRE_GRAFANA after npm ci).
func harnessAvailable(t *testing.T) (node, dir string) {
	t.Helper()
	return nodeHarness(t, "grafana", filepath.Join("@grafana", "scenes"), "WINOBS_REQUIRE_GRAFANA", "make grafana-harness")
}

// nodeHarness returns node and the absolute path of the npm harness in dir
// (relative to tests/), whose node_modules must hold module. It skips when
// either is missing, unless the environment variable require is set (make
// test sets it after npm ci, so CI cannot skip); install is the target that
// installs it.
func nodeHarness(t *testing.T, dir, module, require, install string) (string, string) {
	t.Helper()
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(abs, "node_modules", module))
	}
	if err != nil {
		if os.Getenv(require) != "" {
			t.Fatalf("the %s harness is unavailable: %v (%s runs npm ci in tests/%s)", dir, err, install, dir)
		}
		t.Skipf("the %s harness is unavailable: %v (make test installs it)", dir, err)
	}
	return node, abs
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// backendReplacements is Grafana's backend's $__ replacement list per data
// source type, in its order (tests/grafana/backend-replacements.json).
func backendReplacements(t *testing.T) map[string][][2]string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("grafana", "backend-replacements.json"))
	if err != nil {
		t.Fatal(err)
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(raw, &all); err != nil {
		t.Fatal(err)
	}
	out := map[string][][2]string{}
	for _, ds := range []string{"prometheus", "loki"} {
		var pairs [][2]string
		if err := json.Unmarshal(all[ds], &pairs); err != nil {
			t.Fatalf("backend-replacements.json %s: %v", ds, err)
		}
		out[ds] = pairs
	}
	return out
}

func replaceBackend(expr string, pairs [][2]string) string {
	for _, p := range pairs {
		expr = strings.ReplaceAll(expr, p[0], p[1])
	}
	return expr
}

// The label values the harness's backend answers with: ordinary names and
// names holding every character a variable's value must carry (. | \ $ { [
// space, non-ASCII), except where Grafana itself cannot carry one: the
// cluster is a single-value variable, which Grafana's Loki data source
// inserts with no escaping but of ', so a \ in it breaks LogQL (grafanaLimits
// holds every such case to docs/dashboards.md). Each label has three values,
// so that "several" and distractors exist.
var harnessLabels = map[string][]string{
	"instance":     {"10.0.0.11:9182", "win-a.b|c\\d$e{f}[g] h é:9182", "10.0.0.12:9182"},
	"cluster":      {"prod-eu", "prod.eu|1 $x {y} [z] é", "staging"},
	"k8s_cluster":  {"prod-eu", "prod.eu|1 $x {y} [z] é", "staging"},
	"namespace":    {"default", "team.a|b\\c$d{e}[f] g ü", "web"},
	"pod":          {"web-0", "pod.a|b\\c$d{e}[f] g ü", "web-1"},
	"container_id": {"containerd://0a1b", "containerd://x.y|z\\$w{v}[u] t ö", "containerd://2c3d"},
	"node":         {"win-node-1", "win.node|2\\$a{b}[c] d ñ", "win-node-3"},
	"channel":      {"System", "Microsoft-Windows-TaskScheduler/Operational", "Application"},
	"container":    {"app", "side.car|x\\y$z{w}[v] u ß", "init"},
}

// harnessStates: opened as Grafana opens it, then each variable set to one
// ordinary value, one value full of specials, several values, and All.
func harnessStates() []harnessState {
	pick := func(i ...int) map[string]any {
		set := map[string]any{}
		for label, vals := range harnessLabels {
			var vs []string
			for _, j := range i {
				vs = append(vs, vals[j])
			}
			set[label] = vs
		}
		set["level"] = []string{"Error", "Warning"}[:len(i)]
		set["event_id"] = []string{"7036|7040"}
		set["search"] = []string{"C:\\Windows\\System32 é [x] {y} $z |w."}
		return set
	}
	all := map[string]any{}
	for label := range harnessLabels {
		all[label] = "$__all"
	}
	all["level"] = "$__all"
	return []harnessState{
		{Name: "opened"},
		{Name: "one ordinary value", Set: pick(0)},
		{Name: "one value full of specials", Set: pick(1)},
		{Name: "several values", Set: pick(1, 2)},
		{Name: "All", Set: all},
	}
}

// renderedDashboards renders cfg's dashboards as the classic JSON the
// provisioning and sidecar load.
func renderedDashboards(t *testing.T, cfg *config.Config) []harnessDashboard {
	t.Helper()
	ds, err := dashboards.Build(view.Of(cfg).Dashboards)
	if err != nil {
		t.Fatal(err)
	}
	var out []harnessDashboard
	for _, d := range ds {
		raw, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, harnessDashboard{File: *d.Uid, Model: raw})
	}
	return out
}

// The configurations the harness runs: the default, the multi-cluster second
// configuration, and one whose every literal that reaches a dashboard holds
// the characters Grafana interpolates or PromQL and LogQL escape.
func harnessConfigs(t *testing.T) map[string]*config.Config {
	t.Helper()
	out := map[string]*config.Config{"default": config.Default()}
	for name, path := range map[string]string{
		"multi-cluster": filepath.Join("second", "config.yaml"),
		"hostile":       filepath.Join("grafana", "hostile.yaml"),
	} {
		cfg, err := config.Load(path)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = cfg
	}
	return out
}

// TestDashboardsThroughGrafana runs every rendered dashboard of every
// configuration through Grafana's own code in every state and fails on a
// query Prometheus (or our LogQL reading) cannot parse, a matcher holding a
// variable that does not select exactly the chosen values, a config literal
// that changed on the way, a variable whose query refers to itself, and a
// variable query that lost its selector.
func TestDashboardsThroughGrafana(t *testing.T) {
	replacements := backendReplacements(t)
	states := harnessStates()
	total := map[string]int{}
	for name, cfg := range harnessConfigs(t) {
		t.Run(name, func(t *testing.T) {
			results := grafanaHarness(t, harnessInput{Dashboards: renderedDashboards(t, cfg), Labels: harnessLabels, States: states})
			if want := 4 * len(states); len(results) != want {
				t.Fatalf("harness returned %d dashboard states, want %d", len(results), want)
			}
			c := &checker{replacements: replacements}
			for _, r := range results {
				n := c.check(r)
				total["targets"] += n.targets
				total["variable queries"] += n.variables
				total["matchers"] += n.matchers
			}
			for _, p := range c.problems {
				t.Error(p.msg)
			}
		})
	}
	t.Logf("through Grafana's code: %d panel queries, %d variable queries, %d matchers holding a variable checked value by value (%d configurations × 4 dashboards × %d states)",
		total["targets"], total["variable queries"], total["matchers"], len(harnessConfigs(t)), len(states))
}

type harnessCounts struct{ targets, variables, matchers int }

// harnessProblem is one thing wrong with what Grafana sent, by the data
// source type that sent it ("" when it is not one query's).
type harnessProblem struct{ datasource, msg string }

// checker collects the problems of harness results.
type checker struct {
	replacements map[string][][2]string
	problems     []harnessProblem
}

func (c *checker) errorf(ds, format string, args ...any) {
	c.problems = append(c.problems, harnessProblem{ds, fmt.Sprintf(format, args...)})
}

func (c *checker) check(r harnessResult) harnessCounts {
	where := r.Dashboard + " (" + r.State + ")"
	var n harnessCounts
	vars := map[string]variableState{}
	for _, v := range r.Variables {
		if slices.Contains(v.DependsOn, v.Name) {
			c.errorf("", "%s: variable %s refers to itself in its query: it can only ever list the value it holds", where, v.Name)
		}
		vars[v.Name] = variableState{values: valueList(v.Value), options: v.Options, all: isAll(v.Value), allValue: v.AllValue, textbox: v.Type == "textbox"}
		if v.Type == "query" && len(v.Options) == 0 {
			c.errorf("", "%s: variable %s has no options: its query %q found nothing", where, v.Name, deref(v.Query))
		}
	}
	sent := map[string]harnessSent{}
	for _, s := range r.Sent {
		switch s.Kind {
		case "error":
			c.errorf("", "%s: %s", where, s.Error)
		case "target":
			if _, dup := sent[s.RefID]; !dup {
				sent[s.RefID] = s
			}
		}
	}
	for _, tg := range r.Targets {
		s, ok := sent[tg.RefID]
		if !ok {
			c.errorf("", "%s: panel %s query %s was never sent to the backend", where, tg.Panel, tg.RefID)
			continue
		}
		n.targets++
		local := vars
		if len(tg.Local) > 0 {
			local = withLocal(vars, tg.Local)
		}
		n.matchers += c.compare(where+" "+tg.RefID, tg.Datasource, tg.Template, s.Expr, local)
	}
	// Variable queries: the selector each one sent.
	for _, v := range r.Variables {
		if v.Query == nil || !strings.HasPrefix(*v.Query, "label_values(") {
			continue
		}
		m := labelValuesCall.FindStringSubmatch(*v.Query)
		if m == nil {
			c.errorf("", "%s: variable %s: %q is not label_values(selector, label)", where, v.Name, *v.Query)
			continue
		}
		got, ds, found := variableRequest(r, v.Name, m[2])
		if !found {
			c.errorf("", "%s: variable %s sent no label values request", where, v.Name)
			continue
		}
		n.variables++
		n.matchers += c.compare(where+" variable "+v.Name, ds, m[1], got, vars)
	}
	return n
}

var labelValuesCall = regexp.MustCompile(`(?s)^label_values\((.*),\s*(\w+)\)$`)

// variableRequest finds the last selector sent for variable name: the Loki
// stand-in names its variable; a Prometheus request names only its label,
// which is unique among a dashboard's Prometheus variables.
func variableRequest(r harnessResult, name, label string) (string, string, bool) {
	got, ds, found := "", "", false
	for _, s := range r.Sent {
		switch {
		case s.Kind == "lokiLabelValues" && s.Variable == name:
			got, ds, found = fmt.Sprint(s.Match), "loki", true
		case s.Kind == "labelValues" && s.Label == label:
			switch m := s.Match.(type) {
			case string:
				got = m
			case []any:
				if len(m) > 0 {
					got = fmt.Sprint(m[0])
				}
			}
			ds, found = "prometheus", true
		}
	}
	return got, ds, found
}

type variableState struct {
	values, options []string
	all             bool
	allValue        *string
	textbox         bool
}

func withLocal(vars map[string]variableState, local map[string]string) map[string]variableState {
	out := make(map[string]variableState, len(vars))
	for k, v := range vars {
		out[k] = v
	}
	for k, val := range local {
		v := out[k]
		v.values, v.all = []string{val}, false
		out[k] = v
	}
	return out
}

func valueList(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			out = append(out, fmt.Sprint(e))
		}
		return out
	}
	return nil
}

func isAll(v any) bool {
	vs := valueList(v)
	return len(vs) == 1 && vs[0] == "$__all"
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// grafanaVariableRef is every way scenes 8.19 writes a variable reference
// (VARIABLE_REGEX: $name, [[name]], [[name:fmt]], ${name}, ${name:fmt},
// ${name.field}, ${name["key"]}, ${name[0]}).
var grafanaVariableRef = regexp.MustCompile(`\$(\w+)|\[\[(\w+?)(?::(\w+))?\]\]|\$\{(\w+)((?:\.[^:^{}\[\]]+|\["[^"]*"\]|\['[^']*'\]|\[[^\]"']*\])*)(?::([^}]+))?\}`)

const placeholderPrefix = "WINOBSVAR"

// placeholders turns every variable reference in a template into a marker
// that survives parsing, so that each matcher's variable is known.
func placeholders(template string) string {
	return grafanaVariableRef.ReplaceAllStringFunc(template, func(ref string) string {
		m := grafanaVariableRef.FindStringSubmatch(ref)
		name := m[1] + m[2] + m[4]
		if strings.HasPrefix(name, "__") {
			return ref
		}
		return placeholderPrefix + name + "X"
	})
}

var placeholderRe = regexp.MustCompile(placeholderPrefix + `(\w+?)X`)

// compare parses the template (variables as markers) and what Grafana
// sent, pairs their matchers in order and checks each; it returns how many
// matchers holding a variable it checked.
func (c *checker) compare(where, ds, template, got string, vars map[string]variableState) int {
	backend := c.replacements[ds]
	tmpl := replaceBackend(placeholders(template), backend)
	sent := replaceBackend(got, backend)
	want, err := querySelectors(ds, tmpl)
	if err != nil {
		c.errorf(ds, "%s: the template does not parse: %v\n  %s", where, err, tmpl)
		return 0
	}
	have, err := querySelectors(ds, sent)
	if err != nil {
		c.errorf(ds, "%s: what Grafana sent does not parse: %v\n  sent: %s", where, err, got)
		return 0
	}
	if len(want) != len(have) {
		c.errorf(ds, "%s: %d matchers in the template, %d in what Grafana sent:\n  %s", where, len(want), len(have), got)
		return 0
	}
	checked := 0
	for i, w := range want {
		h := have[i]
		refs := placeholderRe.FindAllStringSubmatch(w.Value, -1)
		if len(refs) == 0 {
			if w.Name != h.Name || w.Type != h.Type || w.Value != h.Value {
				c.errorf(ds, "%s: the literal matcher %s arrived as %s", where, w, h)
			}
			continue
		}
		v, ok := vars[refs[0][1]]
		// A variable is a matcher's whole value, or, =~`${v:regex}|`, the
		// variable or no such label (vocab.VarOrAbsent).
		orAbsent := w.Type == labels.MatchRegexp && w.Value == refs[0][0]+"|"
		if len(refs) != 1 || (w.Value != refs[0][0] && !orAbsent) || !ok {
			c.errorf(ds, "%s: matcher %s: a variable must be a matcher's whole value", where, w)
			continue
		}
		checked++
		if orAbsent {
			if !h.Matches("") {
				c.errorf(ds, "%s: matcher %s does not match a series without %s", where, h, h.Name)
			}
			v.options = slices.DeleteFunc(slices.Clone(v.options), func(o string) bool { return o == "" })
		}
		if msg := selectsExactly(h, w.Type, v); msg != "" {
			c.errorf(ds, "%s: matcher %s holding $%s = %q: %s\n  sent: %s", where, h, refs[0][1], v.values, msg, got)
		}
	}
	return checked
}

// selectsExactly says what is wrong with matcher m for variable v: it must
// match every chosen value and no other candidate (with All and an allValue,
// whatever allValue matches).
func selectsExactly(m *labels.Matcher, templateType labels.MatchType, v variableState) string {
	if m.Type != templateType {
		return fmt.Sprintf("type %s, the template has %s", m.Type, templateType)
	}
	if v.textbox {
		if m.Value != v.values[0] {
			return fmt.Sprintf("the typed text %q arrived as %q", v.values[0], m.Value)
		}
		return ""
	}
	chosen := v.values
	if v.all {
		chosen = v.options
	}
	negate := m.Type == labels.MatchNotEqual || m.Type == labels.MatchNotRegexp
	candidates := slices.Clone(v.options)
	for _, c := range chosen {
		candidates = append(candidates, c+"x", "x"+c, strings.ToUpper(c), strings.ReplaceAll(c, ".", "_"))
	}
	var allMatcher *labels.Matcher
	if v.all && v.allValue != nil {
		allMatcher = labels.MustNewMatcher(labels.MatchRegexp, m.Name, *v.allValue)
	}
	for _, c := range candidates {
		want := slices.Contains(chosen, c)
		if allMatcher != nil && !want {
			want = allMatcher.Matches(c)
		}
		if got := m.Matches(c) != negate; got != want {
			return fmt.Sprintf("selects %q: %v, want %v", c, got, want)
		}
	}
	return ""
}

// querySelectors returns every label matcher of a query in order: PromQL's
// from Prometheus' parser; LogQL's stream selectors (PromQL's matcher
// grammar, which Loki's parser shares), label filters and line filters.
func querySelectors(ds, expr string) ([]*labels.Matcher, error) {
	if ds == "prometheus" {
		e, err := promqlParser.ParseExpr(expr)
		if err != nil {
			return nil, err
		}
		var out []*labels.Matcher
		parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
			if vs, ok := n.(*parser.VectorSelector); ok {
				out = append(out, vs.LabelMatchers...)
			}
			return nil
		})
		return out, nil
	}
	return logqlMatchers(expr)
}

// logqlMatchers reads a LogQL query's stream selectors, its label filters
// (name op "string") and line filters (|= "string", as a matcher named
// "|=" so that it pairs like the others).
func logqlMatchers(expr string) ([]*labels.Matcher, error) {
	var out []*labels.Matcher
	for i := 0; i < len(expr); {
		switch c := expr[i]; {
		case c == '{':
			end, err := selectorEnd(expr, i)
			if err != nil {
				return nil, err
			}
			ms, err := promqlParser.ParseMetricSelector(expr[i : end+1])
			if err != nil {
				return nil, fmt.Errorf("stream selector %s: %w", expr[i:end+1], err)
			}
			out = append(out, ms...)
			i = end + 1
		case c == '|' || c == '!':
			m, err := logqlFilterAt(expr[i:])
			if err != nil {
				return nil, err
			}
			if m == nil {
				i++
				continue
			}
			out = append(out, m.matcher)
			i += m.length
		case c == '"' || c == '`':
			end, err := stringEnd(expr, i)
			if err != nil {
				return nil, err
			}
			i = end + 1
		default:
			i++
		}
	}
	return out, nil
}

const logqlString = "(\"(?:[^\"\\\\]|\\\\.)*\"|`[^`]*`)"

var (
	logqlLabelFilter = regexp.MustCompile(`^\|\s*(\w+)\s*(=~|!~|!=|==|=)\s*` + logqlString)
	logqlLineFilter  = regexp.MustCompile(`^(\|=|\|~|!=|!~)\s*` + logqlString)
)

type logqlFilter struct {
	matcher *labels.Matcher
	length  int
}

// logqlFilterAt reads a label filter (| name op "string") or a line filter
// (|= "string", |~, !=, !~; a matcher named by its operator, so that it
// pairs like the others) at the start of s; nil if there is neither.
func logqlFilterAt(s string) (*logqlFilter, error) {
	types := map[string]labels.MatchType{"=": labels.MatchEqual, "==": labels.MatchEqual, "!=": labels.MatchNotEqual, "=~": labels.MatchRegexp, "!~": labels.MatchNotRegexp,
		"|=": labels.MatchEqual, "|~": labels.MatchRegexp}
	var name, op, lit string
	var length int
	if m := logqlLabelFilter.FindStringSubmatch(s); m != nil {
		name, op, lit, length = m[1], m[2], m[3], len(m[0])
	} else if m := logqlLineFilter.FindStringSubmatch(s); m != nil {
		name, op, lit, length = "line"+m[1], m[1], m[2], len(m[0])
	} else {
		return nil, nil
	}
	val, err := strconv.Unquote(lit)
	if err != nil {
		return nil, fmt.Errorf("string %s: %w", lit, err)
	}
	mm, err := labels.NewMatcher(types[op], name, val)
	if err != nil {
		return nil, fmt.Errorf("%s %s %s: %w", name, op, lit, err)
	}
	return &logqlFilter{mm, length}, nil
}

func selectorEnd(expr string, start int) (int, error) {
	for i := start + 1; i < len(expr); i++ {
		switch expr[i] {
		case '"', '`':
			end, err := stringEnd(expr, i)
			if err != nil {
				return 0, err
			}
			i = end
		case '}':
			return i, nil
		}
	}
	return 0, fmt.Errorf("unclosed stream selector at %d", start)
}

func stringEnd(expr string, start int) (int, error) {
	q := expr[start]
	for i := start + 1; i < len(expr); i++ {
		switch {
		case q == '"' && expr[i] == '\\':
			i++
		case expr[i] == q:
			return i, nil
		}
	}
	return 0, fmt.Errorf("unterminated string at %d", start)
}

// TestGrafanaLimitsAreDocumented: the characters Grafana itself cannot carry
// in a variable's value, measured through its code for a single-value
// variable (the cluster) and a multi-value one (instance, node) and for each
// data source, are exactly what docs/dashboards.md says. If a Grafana release
// fixes one, this fails until the docs say so.
func TestGrafanaLimitsAreDocumented(t *testing.T) {
	cfg, err := config.Load(filepath.Join("second", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	specials := map[string]string{`"`: `q"uote`, `\`: `back\slash`, `'`: `it's`, "`": "back`tick"}
	single := map[string]string{"cluster": cfg.Cluster.Label}
	multi := map[string]string{"instance": "instance", "node": "node"}
	lbls := map[string][]string{}
	for k, v := range harnessLabels {
		lbls[k] = slices.Clone(v)
	}
	var states []harnessState
	for char, value := range specials {
		for kind, vars := range map[string]map[string]string{"single": single, "multi": multi} {
			set := map[string]any{}
			for name, label := range vars {
				lbls[label] = append(lbls[label], value)
				set[name] = []string{value}
			}
			states = append(states, harnessState{Name: kind + " " + char, Set: set})
		}
	}
	results := grafanaHarness(t, harnessInput{Dashboards: renderedDashboards(t, cfg), Labels: lbls, States: states})
	broken := map[string]bool{}
	replacements := backendReplacements(t)
	for _, r := range results {
		c := &checker{replacements: replacements}
		c.check(r)
		for _, p := range c.problems {
			if p.datasource == "" {
				t.Errorf("%s", p.msg)
				continue
			}
			broken[r.State+" "+p.datasource] = true
		}
	}
	doc, err := os.ReadFile(filepath.Join("..", "docs", "dashboards.md"))
	if err != nil {
		t.Fatal(err)
	}
	verdict := map[bool]string{true: "breaks", false: "arrives intact"}
	for _, char := range []string{`"`, `'`, `\`, "`"} {
		code := "`" + char + "`"
		if char == "`" {
			code = "`` ` ``"
		}
		row := fmt.Sprintf("| %s in a value | %s | %s | %s | %s |", code,
			verdict[broken["single "+char+" prometheus"]], verdict[broken["single "+char+" loki"]],
			verdict[broken["multi "+char+" prometheus"]], verdict[broken["multi "+char+" loki"]])
		t.Logf("measured: %s", row)
		if !strings.Contains(string(doc), row) {
			t.Errorf("docs/dashboards.md lacks the measured row %s", row)
		}
	}
}

// TestVariablePatternIsScenes: the Go copies of Grafana's variable pattern
// (here, in vocab's and dashboards' tests) are the pattern @grafana/scenes
// ships, so the checks that read query text as Grafana would cannot drift
// from it.
func TestVariablePatternIsScenes(t *testing.T) {
	harnessAvailable(t)
	js, err := os.ReadFile(filepath.Join("grafana", "node_modules", "@grafana", "scenes", "dist", "index.js"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^const VARIABLE_REGEX = /(.*)/g;$`).FindSubmatch(js)
	if m == nil {
		t.Fatal("no VARIABLE_REGEX in @grafana/scenes' dist/index.js")
	}
	// JavaScript's \${ is Go's \$\{; the final } likewise.
	want := strings.Replace(string(m[1]), `\${`, `\$\{`, 1)
	want = strings.TrimSuffix(want, "}") + `\}`
	if got := grafanaVariableRef.String(); got != want {
		t.Errorf("grafanaVariableRef is\n  %s\nscenes' VARIABLE_REGEX is\n  %s", got, want)
	}
	for _, file := range []string{"../gen/vocab/vocab_test.go", "../gen/dashboards/queries_test.go"} {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(src), "regexp.MustCompile(`"+want+"`)") {
			t.Errorf("%s: its grafanaInterpolation is not scenes' VARIABLE_REGEX", file)
		}
	}
}

// TestHarnessPinsGrafana: the harness's package.json and lockfile hold the
// Grafana versions versions.json names (the Grafana packages besides scenes
// at the Prometheus data source's version, as one Grafana release ships them).
func TestHarnessPinsGrafana(t *testing.T) {
	v := winobs.Pinned()
	want := map[string]string{"@grafana/scenes": v.GrafanaScenes}
	for _, p := range []string{"prometheus", "runtime", "data", "ui", "schema", "e2e-selectors", "i18n"} {
		want["@grafana/"+p] = v.GrafanaPrometheus
	}
	npmPins(t, "grafana", want)
}

// npmPins holds the package.json and package-lock.json of the npm harness
// in dir to the versions want names (versions.json's).
func npmPins(t *testing.T, dir string, want map[string]string) {
	t.Helper()
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	var lock struct {
		Packages map[string]struct {
			Version string `json:"version"`
		} `json:"packages"`
	}
	for file, into := range map[string]any{"package.json": &pkg, "package-lock.json": &lock} {
		raw, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, into); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
	for name, version := range want {
		if got := pkg.Dependencies[name]; got != version {
			t.Errorf("tests/%s/package.json: %s is %q, versions.json says %s", dir, name, got, version)
		}
		if got := lock.Packages["node_modules/"+name].Version; got != version {
			t.Errorf("tests/%s/package-lock.json: %s is %q, versions.json says %s", dir, name, got, version)
		}
	}
}
