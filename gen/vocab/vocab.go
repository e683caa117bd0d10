// Package vocab is the one vocabulary winobs's queries are written in:
// rules (package rules) and dashboards (package dashboards) are siblings
// over it. It holds the typed selectors, rendered one way, with the cluster
// label in one form; the record names; the per-container and per-pod views;
// the metric names that differ between windows_exporter versions; and the
// Service Control Manager's event stream. Every selector is read from the
// config, and each definition is written once, here, as kubernetes-mixin
// keeps its selectors in one config.
package vocab

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/winobs/winobs/contract"
)

// Matcher is one label matcher. Its value is a literal, quoted by Literal,
// or the name of a Grafana variable.
type Matcher struct {
	Name, Op, Value string
	// Variable: Value names a dashboard variable, written "$Value".
	Variable bool
	// orAbsent: the variable's value, regex-escaped by Grafana, or no
	// label at all (VarOrAbsent).
	orAbsent bool
}

// Eq builds an equality matcher (NotEq, Re, NotRe and Var the others).
func Eq(name, value string) Matcher    { return Matcher{Name: name, Op: "=", Value: value} }
func NotEq(name, value string) Matcher { return Matcher{Name: name, Op: "!=", Value: value} }
func Re(name, value string) Matcher    { return Matcher{Name: name, Op: "=~", Value: value} }
func NotRe(name, value string) Matcher { return Matcher{Name: name, Op: "!~", Value: value} }

// Var matches a label against a dashboard variable: op "=" for a single
// value, "=~" for a multi-value or All one.
func Var(name, op, variable string) Matcher {
	return Matcher{Name: name, Op: op, Value: variable, Variable: true}
}

// VarOrAbsent matches a label against a single-value dashboard variable or
// its absence: name=~`${variable:regex}|`. Grafana escapes the value for a
// regular expression (the backquoted string keeps its backslashes), so the
// chosen value matches exactly, whatever it holds but a backquote; the empty
// alternative matches series without the label, as a Prometheus keeps its
// own cluster's series when the cluster is only its external label.
func VarOrAbsent(name, variable string) Matcher {
	return Matcher{Name: name, Op: "=~", Value: variable, Variable: true, orAbsent: true}
}

func (m Matcher) String() string {
	if m.orAbsent {
		return m.Name + m.Op + "`${" + m.Value + ":regex}|`"
	}
	if m.Variable {
		return m.Name + m.Op + `"$` + m.Value + `"`
	}
	return m.Name + m.Op + Literal(m.Value)
}

// Selector is a list of matchers, rendered `{a="b", c=~"d"}` everywhere.
type Selector []Matcher

// With returns the selector with more matchers, leaving s as it was.
func (s Selector) With(ms ...Matcher) Selector { return append(slices.Clip(s), ms...) }

// Matchers renders the matchers without braces, for a selector that adds
// its own (metric{$[exporter], mode="idle"} in a template).
func (s Selector) Matchers() string {
	parts := make([]string, len(s))
	for i, m := range s {
		parts[i] = m.String()
	}
	return strings.Join(parts, ", ")
}

func (s Selector) String() string { return "{" + s.Matchers() + "}" }

// Of selects metric (the metric alone when there are no matchers).
func (s Selector) Of(metric string) string {
	if len(s) == 0 {
		return metric
	}
	return metric + s.String()
}

// Literal is a value as a PromQL and LogQL string literal that Grafana
// leaves alone. Grafana replaces $name, ${name…} and [[name]] in query text
// before the data source reads it and has no escape for them, so every '$'
// and every '[' followed by another are written as the escapes \x24 and \x5b, which
// both languages read back as the same characters (a regex matcher
// included: unquoting comes before the regex). Rules use the same form, so
// a query is one text wherever it runs.
func Literal(s string) string {
	q := strconv.Quote(s)
	var b strings.Builder
	for i := 0; i < len(q); i++ {
		switch {
		case q[i] == '$':
			b.WriteString(`\x24`)
		case q[i] == '[' && i+1 < len(q) && q[i+1] == '[':
			b.WriteString(`\x5b`)
		default:
			b.WriteByte(q[i])
		}
	}
	return b.String()
}

// Terms is the vocabulary of one configuration, for rules (every cluster at
// once) or for dashboards (the cluster the $cluster variable names, when the
// config has one).
type Terms struct {
	// ClusterLabel is kept by every aggregation and join.
	ClusterLabel string
	// cluster is what every PromQL selector adds: nothing for rules,
	// the $cluster variable or no cluster label on a multi-cluster config's
	// dashboards; lokiCluster what every LogQL one adds (the agents write
	// the cluster on every stream).
	cluster, lokiCluster           Selector
	exporter, ksm, events, podLogs Matcher
	services                       []string
	// metadata: the Loki keeps structured metadata (logs.structuredMetadata):
	// an event's channel and LogMonitor's fields are metadata; without it
	// the channel is a stream label and the fields are read from the line.
	metadata bool
}

// Settings are the configured names the vocabulary is written in; package
// view routes them from the config (vocab reads no config).
type Settings struct {
	// ClusterLabel names the cluster on every series; ClusterName is this
	// cluster's, "" when the config names none (one cluster alone).
	ClusterLabel, ClusterName string
	// The scrape jobs of windows_exporter and kube-state-metrics, and the
	// job labels of the event and pod-log streams.
	ExporterJob, KSMJob, EventsJob, PodLogsJob string
	// Services are the services the node-services alert watches.
	Services []string
	// StructuredMetadata: the Loki keeps structured metadata
	// (logs.structuredMetadata).
	StructuredMetadata bool
}

// ForRules is the vocabulary of the rules: they evaluate every cluster's
// series, so selectors name no cluster.
func ForRules(s Settings) Terms {
	return Terms{
		ClusterLabel: s.ClusterLabel,
		exporter:     Eq(contract.LabelJob, s.ExporterJob),
		ksm:          Eq(contract.LabelJob, s.KSMJob),
		events:       Eq(contract.LabelJob, s.EventsJob),
		podLogs:      Eq(contract.LabelJob, s.PodLogsJob),
		services:     s.Services,
		metadata:     s.StructuredMetadata,
	}
}

// ForDashboards is the vocabulary of the dashboards: with a cluster name in
// the config, every selector also selects the $cluster variable. A PromQL
// selector also takes series without the cluster label: a Prometheus whose
// cluster is only an external label keeps its series so, and they are the
// chosen cluster's when Grafana reads that Prometheus (docs/dashboards.md).
// LogQL's streams always carry it: the agents write it.
func ForDashboards(s Settings) Terms {
	t := ForRules(s)
	if s.ClusterName != "" {
		t.cluster = Selector{VarOrAbsent(s.ClusterLabel, "cluster")}
		t.lokiCluster = Selector{Var(s.ClusterLabel, "=", "cluster")}
	}
	return t
}

// ForCluster is the vocabulary of one cluster's live checks (doctor): with
// a cluster name in the config, every selector selects that cluster.
func ForCluster(s Settings) Terms {
	t := ForRules(s)
	if s.ClusterName != "" {
		t.cluster = Selector{Eq(s.ClusterLabel, s.ClusterName)}
		t.lokiCluster = t.cluster
	}
	return t
}

// job is the one form of every selector: the job, the cluster, then ms.
func (t Terms) job(job Matcher, ms []Matcher) Selector {
	return Selector{job}.With(t.cluster...).With(ms...)
}

// Exporter selects windows_exporter's series.
func (t Terms) Exporter(ms ...Matcher) Selector { return t.job(t.exporter, ms) }

// KSM selects kube-state-metrics' series.
func (t Terms) KSM(ms ...Matcher) Selector { return t.job(t.ksm, ms) }

// Cluster selects the cluster alone: the selector of a record, which carries
// no job.
func (t Terms) Cluster(ms ...Matcher) Selector { return slices.Clip(t.cluster).With(ms...) }

// Events selects the event log streams (LogQL).
func (t Terms) Events(ms ...Matcher) Selector {
	return Selector{t.events}.With(t.lokiCluster...).With(ms...)
}

// Channels selects the events of these channels (LogQL), ms narrowing the
// streams (a node): the streams of their class (both classes: no class
// matcher), then the channel's structured metadata, since a class's stream
// holds several channels of the node. Loki reads only the chosen class's
// chunks: Security's detections never read the node class's. Without
// structured metadata (logs.structuredMetadata: false) the channel is a
// stream label, matched in the selector.
func (t Terms) Channels(ms []Matcher, channels ...string) string {
	classes := map[string]bool{}
	for _, c := range channels {
		classes[contract.EventClass(c)] = true
	}
	sel := t.Events(ms...)
	if len(classes) == 1 {
		for class := range classes {
			sel = sel.With(Eq(contract.LabelClass, class))
		}
	}
	if !t.metadata {
		return sel.With(channelMatcher(channels...)).String()
	}
	return sel.String() + " | " + channelMatcher(channels...).String()
}

// StructuredMetadata reports whether the layout carries structured
// metadata (logs.structuredMetadata): what the agents write follows it.
func (t Terms) StructuredMetadata() bool { return t.metadata }

// podLogFields reads LogMonitor's fields from a pod log line at query time,
// under the names the pod pipeline gives its structured metadata
// (contract's Meta*), for a Loki without it: a JSON line's source type,
// EventLog's event source, id and level (an ETW line's id and level too;
// its provider is not the source). A line LogMonitor wrote as invalid JSON
// yields none of them.
var podLogFields = fmt.Sprintf(` | json %s="Source", %s="LogEntry.EventSource", %s="LogEntry.EventId", %s="LogEntry.Level"`,
	contract.MetaLogMonitor, contract.MetaSource, contract.MetaEventID, contract.MetaLevel)

// PodLogEntries selects the pod log streams (LogQL) with LogMonitor's
// fields (contract's Meta*) ready for label filters: structured metadata
// the pod pipeline wrote, or, without it, read from the line.
func (t Terms) PodLogEntries(ms ...Matcher) string {
	if t.metadata {
		return t.PodLogs(ms...).String()
	}
	return t.PodLogs(ms...).String() + podLogFields
}

// channelMatcher matches the events of these channels by their structured
// metadata (a label filter, after the selector).
func channelMatcher(channels ...string) Matcher {
	if len(channels) == 1 {
		return Eq(contract.LabelChannel, channels[0])
	}
	quoted := make([]string, len(channels))
	for i, c := range channels {
		quoted[i] = regexp.QuoteMeta(c)
	}
	return Re(contract.LabelChannel, strings.Join(quoted, "|"))
}

// AllEvents selects the event log streams of every cluster (the Loki
// dashboard's cluster variable lists them).
func (t Terms) AllEvents() Selector { return Selector{t.events} }

// AllExporters selects windows_exporter's series of every cluster: what a
// cluster variable lists (filtered on itself, it could list only the one
// it holds).
func (t Terms) AllExporters() Selector { return Selector{t.exporter} }

// PodLogs selects the pod log streams (LogQL).
func (t Terms) PodLogs(ms ...Matcher) Selector {
	return Selector{t.podLogs}.With(t.lokiCluster...).With(ms...)
}

// By is an aggregation's label list: the cluster label, then labels.
func (t Terms) By(labels ...string) string {
	return strings.Join(append([]string{t.ClusterLabel}, labels...), ", ")
}

// Services are the node services that must run.
func (t Terms) Services() []string { return t.services }

// ServiceMatcher matches the node services, case-insensitively (services
// report the case they were registered with).
func (t Terms) ServiceMatcher() Matcher { return Re("name", ServicesRegex(t.services)) }

// ServicesRegex matches any of the services, case-insensitively (services
// report the case they were registered with): one pattern for the
// exporter's service filter, the rules and the dashboards. PromQL and the
// exporter anchor it.
func ServicesRegex(services []string) string {
	quoted := make([]string, len(services))
	for i, name := range services {
		quoted[i] = regexp.QuoteMeta(name)
	}
	return "(?i)(" + strings.Join(quoted, "|") + ")"
}

var placeholder = regexp.MustCompile(`\$\[(\w+)\]`)

// Args are a template's own values: thresholds, durations, a view's inputs.
type Args map[string]string

// Expand fills a query template's $[name] placeholders, the one way winobs
// writes rule expressions and the views they share, from one dictionary:
// the vocabulary (cluster: the label; exporter and ksm: matchers without
// braces; volumes: the drive-letter matcher), every record by its field
// name in RecordNames, and args, the template's own values. Values are
// inserted as they are, never expanded again. An unknown placeholder, an
// argument that shadows the vocabulary and an argument the template never
// uses are errors.
func (t Terms) Expand(tmpl string, args Args) (string, error) {
	terms := map[string]string{
		"cluster":  t.ClusterLabel,
		"exporter": t.Exporter().Matchers(),
		"ksm":      t.KSM().Matchers(),
		"volumes":  Volumes.String(),
	}
	maps.Copy(terms, recordPlaceholders)
	maps.Copy(terms, metricPlaceholders)
	var errs []string
	for name, v := range args {
		if _, ok := terms[name]; ok {
			errs = append(errs, "argument "+name+" shadows the vocabulary")
		}
		terms[name] = v
	}
	used := map[string]bool{}
	s := placeholder.ReplaceAllStringFunc(tmpl, func(m string) string {
		name := m[2 : len(m)-1]
		v, ok := terms[name]
		if !ok {
			errs = append(errs, "unknown placeholder "+m)
		}
		used[name] = true
		return v
	})
	for name := range args {
		if !used[name] {
			errs = append(errs, "argument "+name+" is not used")
		}
	}
	if len(errs) > 0 {
		slices.Sort(errs)
		return "", fmt.Errorf("template: %s", strings.Join(errs, "; "))
	}
	return s, nil
}

// fill expands a template written in this package, whose placeholders are
// known: an error is a bug in the template, caught by any test.
func (t Terms) fill(tmpl string, args Args) string {
	s, err := t.Expand(tmpl, args)
	if err != nil {
		panic(err)
	}
	return s
}
