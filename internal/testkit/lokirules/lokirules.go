// Package lokirules runs unit tests of Loki alerting rules on a real Loki,
// in promtool's test-file shape with log streams for input series: each
// test pushes its lines at chosen times into a tenant of its own, then
// evaluates the rules at every evaluation interval up to each eval_time
// (an instant LogQL query at that time, so Loki's own engine computes every
// value) and holds the firing alerts, `for` included, to the expected ones.
// docs/loki-rule-tests.md documents the format.
package lokirules

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/template"
	"go.yaml.in/yaml/v3"

	"github.com/winobs/winobs/contract"
	"github.com/winobs/winobs/internal/testkit/promtest"
	"github.com/winobs/winobs/shipper/eventxml"
)

// File is a test file: promtool's header (the rule files are Loki rule
// files, Prometheus' rule-file groups; a lokitool namespace file's
// namespace key is ignored), then Loki's tests.
type File struct {
	promtest.Header `yaml:",inline"`
	// EventsDir holds the Event XML files entries name, relative to the
	// test file.
	EventsDir string `yaml:"events_dir"`
	Tests     []Test `yaml:"tests"`
	// WithoutMetadata pushes in the layout of logs.structuredMetadata:
	// false, which a Loki without structured metadata takes: an event's
	// channel a stream label, and no metadata at all (a pod line carries
	// LogMonitor's fields itself). Set by the caller, not the file.
	WithoutMetadata bool `yaml:"-"`
}

// Test is one test: streams pushed, alerts expected.
type Test struct {
	Name         string               `yaml:"name"`
	InputStreams []InputStream        `yaml:"input_streams"`
	AlertTests   []promtest.AlertTest `yaml:"alert_rule_test"`
}

// InputStream is one stream's lines.
type InputStream struct {
	// Stream is the stream's labels as a LogQL selector:
	// '{job="windows-events", node="n1"}'.
	Stream  string  `yaml:"stream"`
	Entries []Entry `yaml:"entries"`
}

// Entry is a line pushed Times times (1 if unset), at At after the test's
// start and then every Every.
type Entry struct {
	At    model.Duration `yaml:"at"`
	Every model.Duration `yaml:"every"`
	Times int            `yaml:"times"`
	// Line is the line as it is, or Event an Event XML file (in EventsDir)
	// as Alloy's loki.source.windowsevent writes it (shipper/eventxml),
	// with Replace's strings replaced in the XML first.
	Line    string            `yaml:"line"`
	Event   string            `yaml:"event"`
	Replace map[string]string `yaml:"replace"`
	// Metadata is the entry's structured metadata (what Alloy's pod
	// pipeline attaches to LogMonitor's lines). An Event entry has its
	// event's channel, as the agents attach it.
	Metadata map[string]string `yaml:"metadata"`
}

// Loki is where the tests run: a Loki with auth_enabled, whose tenants keep
// the tests apart.
type Loki interface {
	Push(ctx context.Context, tenant string, body []byte) error
	Query(ctx context.Context, tenant, query string, at time.Time) ([]Sample, error)
}

// Sample is one element of an instant query's vector.
type Sample struct {
	Labels map[string]string
	Value  float64
}

// Load reads a test file and the rules it names.
func Load(path string) (*File, []rulefmt.Rule, error) {
	var f File
	if err := promtest.Read(path, &f); err != nil {
		return nil, nil, err
	}
	if err := f.check(); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	f.EventsDir = filepath.Join(filepath.Dir(path), f.EventsDir)
	var rules []rulefmt.Rule
	for _, p := range f.RuleFiles {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, nil, err
		}
		var groups struct {
			Groups []rulefmt.RuleGroup `yaml:"groups"`
		}
		if err := yaml.Unmarshal(b, &groups); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", p, err)
		}
		for _, g := range groups.Groups {
			rules = append(rules, g.Rules...)
		}
	}
	return &f, rules, nil
}

// Bounds a test file cannot lift: what a test may push and ask of the Loki
// it runs on, so a mistyped file fails at once instead of taking the
// machine (times: 4000000 took 1.3 GB; evaluation_interval: 1ms, 28.8 M
// queries). Loki takes lines up to 7 days back, so nothing lies further.
const (
	MinEvaluationInterval = time.Second
	MaxEvaluations        = 2000    // instant queries an alert test makes
	MaxEntries            = 100_000 // lines a test pushes
	MaxSpan               = 7 * 24 * time.Hour
	// RequestTimeout bounds every request to Loki.
	RequestTimeout = 30 * time.Second
	maxAnswerBytes = 64 << 20
)

// check holds f to the bounds, naming the test and field past one.
func (f *File) check() error {
	step := time.Duration(f.EvaluationInterval)
	if step < MinEvaluationInterval {
		return fmt.Errorf("evaluation_interval %v: at least %v", step, MinEvaluationInterval)
	}
	for _, t := range f.Tests {
		entries := 0
		for _, in := range t.InputStreams {
			for _, e := range in.Entries {
				switch {
				case e.Times < 0 || e.At < 0 || e.Every < 0:
					return fmt.Errorf("test %q: an entry's at, every and times must not be negative", t.Name)
				case time.Duration(e.At)+time.Duration(max(e.Times-1, 0))*time.Duration(e.Every) > MaxSpan:
					return fmt.Errorf("test %q: an entry reaches past %v after the start, which Loki does not take", t.Name, MaxSpan)
				}
				entries += max(e.Times, 1)
				if entries > MaxEntries {
					return fmt.Errorf("test %q: more than %d lines", t.Name, MaxEntries)
				}
			}
		}
		for _, at := range t.AlertTests {
			if at.EvalTime < 0 || time.Duration(at.EvalTime) > MaxSpan {
				return fmt.Errorf("test %q: eval_time %v: from 0 to %v", t.Name, at.EvalTime, model.Duration(MaxSpan))
			}
			if n := time.Duration(at.EvalTime)/step + 1; n > MaxEvaluations {
				return fmt.Errorf("test %q: eval_time %v at evaluation_interval %v is %d evaluations, over %d", t.Name, at.EvalTime, f.EvaluationInterval, n, MaxEvaluations)
			}
		}
	}
	return nil
}

// Failure is one way a test's alerts differ from the expected ones.
type Failure struct {
	Test, Alert string
	EvalTime    time.Duration
	Msg         string
}

func (f Failure) Error() string {
	return fmt.Sprintf("%s: %s at %v: %s", f.Test, f.Alert, f.EvalTime, f.Msg)
}

// Run runs every test of f with rules on loki. Each test's time 0 is
// start; its lines must lie within Loki's window (7 days back, nothing
// ahead). Tenants are prefix plus the test's index.
func (f *File) Run(ctx context.Context, loki Loki, rules []rulefmt.Rule, start time.Time, prefix string) ([]Failure, error) {
	var failures []Failure
	for i, test := range f.Tests {
		tenant := fmt.Sprintf("%s%d", prefix, i)
		body, err := f.pushBody(test, start)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", test.Name, err)
		}
		if err := loki.Push(ctx, tenant, body); err != nil {
			return nil, fmt.Errorf("%s: pushing its lines: %w", test.Name, err)
		}
		for _, at := range test.AlertTests {
			got, err := f.firing(ctx, loki, tenant, rules, at.Alertname, start, time.Duration(at.EvalTime))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", test.Name, err)
			}
			if msg := compare(at, got); msg != "" {
				failures = append(failures, Failure{test.Name, at.Alertname, time.Duration(at.EvalTime), msg})
			}
		}
	}
	return failures, nil
}

// pushBody is the test's streams as one push (JSON, lines in time order).
func (f *File) pushBody(test Test, start time.Time) ([]byte, error) {
	type stream struct {
		Stream map[string]string `json:"stream"`
		Values [][]any           `json:"values"`
	}
	var push struct {
		Streams []stream `json:"streams"`
	}
	for _, in := range test.InputStreams {
		lbls, err := parseSelector(in.Stream)
		if err != nil {
			return nil, err
		}
		type entry struct {
			ts   time.Time
			line string
			meta map[string]string
		}
		// An input stream is one Loki stream, or, without metadata, one a
		// channel of its events.
		entries := map[string][]entry{}
		var channels []string
		for _, e := range in.Entries {
			line, channel, err := f.line(e)
			if err != nil {
				return nil, err
			}
			meta := e.Metadata
			if channel != "" {
				// The agents' stream class and metadata: a stream the
				// agents never write would test nothing.
				if class := contract.EventClass(channel); lbls[contract.LabelClass] != class {
					return nil, fmt.Errorf("stream %s: %s's event %s is in the agents' stream class %q", in.Stream, channel, e.Event, class)
				}
				meta = maps.Clone(meta)
				if meta == nil {
					meta = map[string]string{}
				}
				if _, ok := meta[contract.LabelChannel]; !ok {
					meta[contract.LabelChannel] = channel
				}
			}
			streamOf := ""
			if f.WithoutMetadata {
				if channel != "" {
					streamOf = meta[contract.LabelChannel]
				}
				meta = nil
			}
			if _, ok := entries[streamOf]; !ok {
				channels = append(channels, streamOf)
			}
			for k := range max(e.Times, 1) {
				entries[streamOf] = append(entries[streamOf], entry{start.Add(time.Duration(e.At) + time.Duration(k)*time.Duration(e.Every)), line, meta})
			}
		}
		for _, channel := range channels {
			es := entries[channel]
			sort.SliceStable(es, func(i, j int) bool { return es[i].ts.Before(es[j].ts) })
			s := stream{Stream: lbls}
			if channel != "" {
				s.Stream = maps.Clone(lbls)
				s.Stream[contract.LabelChannel] = channel
			}
			for _, e := range es {
				v := []any{strconv.FormatInt(e.ts.UnixNano(), 10), e.line}
				if len(e.meta) > 0 {
					v = append(v, e.meta)
				}
				s.Values = append(s.Values, v)
			}
			push.Streams = append(push.Streams, s)
		}
	}
	return json.Marshal(push)
}

// EventXML is an Event entry's XML, its Replace applied: what an agent
// reads from the event log.
func (f *File) EventXML(e Entry) ([]byte, error) {
	raw, err := os.ReadFile(filepath.Join(f.EventsDir, e.Event))
	if err != nil {
		return nil, err
	}
	xml := string(raw)
	for _, from := range slices.Sorted(maps.Keys(e.Replace)) {
		if !strings.Contains(xml, from) {
			return nil, fmt.Errorf("%s holds no %q to replace", e.Event, from)
		}
		xml = strings.ReplaceAll(xml, from, e.Replace[from])
	}
	return []byte(xml), nil
}

// line is an entry's line: as given, or its event as Alloy writes it, with
// the event's channel.
func (f *File) line(e Entry) (line, channel string, err error) {
	if (e.Line == "") == (e.Event == "") {
		return "", "", fmt.Errorf("an entry needs either line or event")
	}
	if e.Line != "" {
		return e.Line, "", nil
	}
	xml, err := f.EventXML(e)
	if err != nil {
		return "", "", err
	}
	ev, err := eventxml.Parse(xml)
	if err != nil {
		return "", "", fmt.Errorf("%s: %w", e.Event, err)
	}
	return string(ev.Line(nil, eventxml.Lookups{})), ev.Channel(), nil
}

// parseSelector reads '{a="b", c="d"}' (values as Go-quoted strings).
func parseSelector(s string) (map[string]string, error) {
	body, open := strings.CutPrefix(strings.TrimSpace(s), "{")
	body, closed := strings.CutSuffix(body, "}")
	if !open || !closed {
		return nil, fmt.Errorf("stream %q: want {name=\"value\", ...}", s)
	}
	out := map[string]string{}
	for body = strings.TrimSpace(body); body != ""; {
		name, rest, ok := strings.Cut(body, "=")
		if !ok {
			return nil, fmt.Errorf("stream %q: want name=\"value\"", s)
		}
		q, err := strconv.QuotedPrefix(strings.TrimSpace(rest))
		if err != nil {
			return nil, fmt.Errorf("stream %q: %v", s, err)
		}
		out[strings.TrimSpace(name)], _ = strconv.Unquote(q)
		body = strings.TrimPrefix(strings.TrimSpace(strings.TrimSpace(rest)[len(q):]), ",")
		body = strings.TrimSpace(body)
	}
	return out, nil
}

// alert is a firing or pending alert.
type alert struct {
	labels, annotations map[string]string
	activeAt            time.Duration
}

// firing evaluates the rules named alertName from time 0 to evalTime at
// every evaluation interval, as Prometheus' and Loki's rulers do: a result
// new at t is pending from t and fires once it has been pending for the
// rule's `for`; a result that goes away resolves. It returns what fires at
// evalTime.
func (f *File) firing(ctx context.Context, loki Loki, tenant string, rules []rulefmt.Rule, alertName string, start time.Time, evalTime time.Duration) ([]alert, error) {
	var named []rulefmt.Rule
	for _, r := range rules {
		if r.Alert == alertName {
			named = append(named, r)
		}
	}
	if len(named) == 0 {
		return nil, fmt.Errorf("no alerting rule %s", alertName)
	}
	step := time.Duration(f.EvaluationInterval)
	active := make([]map[string]*alert, len(named))
	var out []alert
	for t := time.Duration(0); t <= evalTime; t += step {
		out = out[:0]
		for i, r := range named {
			samples, err := loki.Query(ctx, tenant, r.Expr, start.Add(t))
			if err != nil {
				return nil, fmt.Errorf("%s at %v: %w", alertName, t, err)
			}
			now := map[string]*alert{}
			for _, s := range samples {
				a, err := instance(r, s, start.Add(t))
				if err != nil {
					return nil, err
				}
				key := labels.FromMap(a.labels).String()
				if prev, ok := active[i][key]; ok {
					a.activeAt = prev.activeAt
				} else {
					a.activeAt = t
				}
				now[key] = a
			}
			active[i] = now
			for _, a := range now {
				if t-a.activeAt >= time.Duration(r.For) {
					out = append(out, *a)
				}
			}
		}
	}
	return out, nil
}

// instance is the alert a rule makes of one sample: the sample's labels,
// the rule's labels (expanded) and alertname; its annotations expanded as
// Prometheus expands them.
func instance(r rulefmt.Rule, s Sample, at time.Time) (*alert, error) {
	data := template.AlertTemplateData(s.Labels, nil, "", promql.Sample{F: s.Value})
	defs := "{{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}{{$externalURL := .ExternalURL}}{{$value := .Value}}"
	expand := func(text string) (string, error) {
		return template.NewTemplateExpander(context.Background(), defs+text, "__alert_"+r.Alert, data,
			model.TimeFromUnixNano(at.UnixNano()), nil, &url.URL{}, nil).Expand()
	}
	a := &alert{labels: maps.Clone(s.Labels), annotations: map[string]string{}}
	for k, v := range r.Labels {
		x, err := expand(v)
		if err != nil {
			return nil, fmt.Errorf("%s: label %s: %w", r.Alert, k, err)
		}
		a.labels[k] = x
	}
	a.labels["alertname"] = r.Alert
	for k, v := range r.Annotations {
		x, err := expand(v)
		if err != nil {
			return nil, fmt.Errorf("%s: annotation %s: %w", r.Alert, k, err)
		}
		a.annotations[k] = x
	}
	return a, nil
}

// compare reports how the firing alerts differ from the expected ones ("":
// they match). Annotations are compared where the test gives them.
func compare(at promtest.AlertTest, got []alert) string {
	var want, have []string
	for _, e := range at.ExpAlerts {
		l := maps.Clone(e.ExpLabels)
		if l == nil {
			l = map[string]string{}
		}
		l["alertname"] = at.Alertname
		want = append(want, labels.FromMap(l).String())
	}
	for _, a := range got {
		have = append(have, labels.FromMap(a.labels).String())
	}
	slices.Sort(want)
	slices.Sort(have)
	if !slices.Equal(want, have) {
		return fmt.Sprintf("firing %v, want %v", have, want)
	}
	for _, e := range at.ExpAlerts {
		l := maps.Clone(e.ExpLabels)
		if l == nil {
			l = map[string]string{}
		}
		l["alertname"] = at.Alertname
		key := labels.FromMap(l).String()
		for _, a := range got {
			if labels.FromMap(a.labels).String() != key {
				continue
			}
			for k, v := range e.ExpAnnotations {
				if a.annotations[k] != v {
					return fmt.Sprintf("%s: annotation %s = %q, want %q", key, k, a.annotations[k], v)
				}
			}
		}
	}
	return ""
}

// HTTP is a Loki reached over its HTTP API. Every request has a
// deadline: Client's (RequestTimeout when nil).
type HTTP struct {
	URL    string
	Client *http.Client
}

var defaultClient = &http.Client{Timeout: RequestTimeout}

func (h HTTP) do(req *http.Request) (int, []byte, error) {
	c := h.Client
	if c == nil {
		c = defaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	return resp.StatusCode, b, err
}

// Push sends a JSON push body as tenant.
func (h HTTP) Push(ctx context.Context, tenant string, body []byte) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.URL+"/loki/api/v1/push", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Scope-OrgID", tenant)
	code, b, err := h.do(req)
	if err != nil {
		return err
	}
	if code != http.StatusNoContent {
		return fmt.Errorf("push: %d %s", code, b)
	}
	return nil
}

// Query runs an instant metric query as tenant at a time.
func (h HTTP) Query(ctx context.Context, tenant, query string, at time.Time) ([]Sample, error) {
	v := url.Values{"query": {query}, "time": {strconv.FormatInt(at.UnixNano(), 10)}}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, h.URL+"/loki/api/v1/query?"+v.Encode(), nil)
	req.Header.Set("X-Scope-OrgID", tenant)
	code, b, err := h.do(req)
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("query %s: %d %s", query, code, b)
	}
	var r struct {
		Data struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("query %s: %v: %s", query, err, b)
	}
	if r.Data.ResultType != "vector" {
		return nil, fmt.Errorf("query %s: a %s, not a vector (an alert's expression is a metric query)", query, r.Data.ResultType)
	}
	var out []Sample
	for _, s := range r.Data.Result {
		v, err := strconv.ParseFloat(fmt.Sprint(s.Value[1]), 64)
		if err != nil {
			return nil, fmt.Errorf("query %s: value %v", query, s.Value[1])
		}
		out = append(out, Sample{Labels: s.Metric, Value: v})
	}
	return out, nil
}
