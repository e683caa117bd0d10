package azuremonitor

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/prometheus/prometheus/model/rulefmt"
	corev1 "k8s.io/api/core/v1"
	sigyaml "sigs.k8s.io/yaml"

	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/gen/view"
)

// The settings' sections and keys winobs reads or writes, as ama-metrics'
// parsers name them (Azure/prometheus-collector, otelcollector/shared/
// configmap/mp: tomlparser-default-scrape-settings.go reads the v1 or v2
// scrape section, tomlparser-default-targets-metrics-keep-list.go the keep-
// lists and the minimal ingestion profile, tomlparser-scrape-interval.go
// the intervals, tomlparser-prometheus-collector-settings.go the alias).
// Schema v1 holds each section as a key of the ConfigMap's data; v2 nests
// the cluster's sections in data["cluster-metrics"] as "<name>: |-" lines
// (shared/helpers.go, ParseMetricsFiles) and keeps
// prometheus-collector-settings a key of its own.
const (
	sectionScrapeV1  = "default-scrape-settings-enabled"
	sectionScrapeV2  = "default-targets-scrape-enabled"
	sectionKeep      = "default-targets-metrics-keep-list"
	sectionInterval  = "default-targets-scrape-interval-settings"
	sectionCollector = "prometheus-collector-settings"
	sectionMinimalV2 = "minimal-ingestion-profile"
	clusterMetricsV2 = "cluster-metrics"
	keyMinimalV1     = "minimalingestionprofile"
	keyMinimalV2     = "enabled"
	keyAlias         = "cluster_alias"
	keySchema        = "schema-version"
)

// Conflicts are values of a cluster's settings winobs cannot work with:
// each names the key, both values and the way out. Merge writes nothing
// while there is one.
type Conflicts []string

func (c Conflicts) Error() string {
	return fmt.Sprintf("%d conflict(s) between your ama-metrics settings and winobs's needs (nothing was written):\n  %s",
		len(c), strings.Join(c, "\n  "))
}

// Merge is the cluster's ama-metrics settings ConfigMap (current, as
// kubectl get -o yaml prints it) with what winobs needs added, for
// kubectl replace: every section, key and line of the user's kept as
// written, schema-version and config-version included; a keep-list
// extended by the names its regular expression does not already keep (and
// left alone where it keeps everything: the minimal ingestion profile off
// and the list empty); a key winobs needs and the user's settings lack
// added; a value of the user's that serves winobs kept. A value winobs
// cannot work with is a conflict, returned with every other one in
// Conflicts, and nothing is merged. notes say what was kept that costs
// something. The server-side metadata (uid, managedFields, kubectl's
// last-applied annotation) is dropped; resourceVersion is kept, so a
// replace fails if the ConfigMap changed since it was read.
func Merge(v view.Managed, groups rulefmt.RuleGroups, current []byte) (merged []byte, notes []string, err error) {
	need, err := NeedsOf(v, groups)
	if err != nil {
		return nil, nil, err
	}
	var cm corev1.ConfigMap
	if err := sigyaml.UnmarshalStrict(current, &cm); err != nil {
		return nil, nil, fmt.Errorf("the current settings are not one ConfigMap as kubectl get -o yaml prints it: %w", err)
	}
	if cm.Kind != "ConfigMap" || cm.Name != SettingsName || cm.Namespace != SettingsNamespace {
		return nil, nil, fmt.Errorf("the current settings are %s %s/%s, want ConfigMap %s/%s (kubectl get cm -n %[4]s %[5]s -o yaml)",
			cm.Kind, cm.Namespace, cm.Name, SettingsNamespace, SettingsName)
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	s, err := readSettings(cm.Data)
	if err != nil {
		return nil, nil, err
	}
	var conflicts Conflicts

	// The default targets: kube-state-metrics' on, ama-metrics' own
	// windows-exporter target left as the user has it (off by default).
	scrape := s.section(s.scrapeSection())
	if val, ok := scrape.get(TargetKubeState); ok && val == "false" {
		conflicts = append(conflicts, fmt.Sprintf("%s: %s = false: winobs's rules and dashboards read kube-state-metrics through that default target: set it to true",
			s.scrapeSection(), TargetKubeState))
	} else if !ok {
		scrape.set(TargetKubeState, "true")
	}
	if val, ok := scrape.get(TargetWindowsExporter); ok && val == "true" {
		notes = append(notes, fmt.Sprintf("%s: %s = true is kept: ama-metrics' own windows-exporter job scrapes every node's exporter beside winobs's PodMonitor, "+
			"twice the exporter's series ingested (winobs's rules select their own job); set it to false unless Azure's own Windows dashboards need it", s.scrapeSection(), TargetWindowsExporter))
	} else if !ok {
		scrape.set(TargetWindowsExporter, "false")
	}

	// The keep-lists, which the minimal ingestion profile (on by default)
	// ORs with Azure's short lists; with it off a list is used as it is,
	// and an empty one keeps everything.
	minimal := s.minimal()
	keep := s.section(sectionKeep)
	for _, target := range []string{TargetKubeState, TargetWindowsExporter} {
		user, _ := keep.get(target)
		if user == "" && !minimal {
			continue
		}
		re, err := regexp.Compile("^(?:" + user + ")$")
		if err != nil {
			conflicts = append(conflicts, fmt.Sprintf("%s: %s = %q is not a regular expression ama-metrics accepts (%v): fix it first", sectionKeep, target, user, err))
			continue
		}
		var missing []string
		for _, name := range need.Keep[target] {
			if user == "" || !re.MatchString(name) {
				missing = append(missing, name)
			}
		}
		if len(missing) > 0 {
			keep.set(target, strings.Join(append(slices.DeleteFunc([]string{user}, func(s string) bool { return s == "" }), missing...), "|"))
		}
	}

	interval := s.section(sectionInterval)
	if _, ok := interval.get(TargetWindowsExporter); !ok {
		interval.set(TargetWindowsExporter, need.Interval[TargetWindowsExporter])
	}

	// The cluster label: the user's alias decides it as much as winobs's.
	collector := s.section(sectionCollector)
	alias, _ := collector.get(keyAlias)
	label := config.AzureClusterLabel(v.Azure.Cluster, alias)
	aliased := config.AzureClusterLabel("", alias) != ""
	switch {
	case need.Alias != "" && !aliased:
		collector.set(keyAlias, need.Alias)
	case need.Alias != "" && label != need.Alias:
		conflicts = append(conflicts, fmt.Sprintf("%s: %s = %q, which ama-metrics writes as cluster=%q, but winobs's cluster.name is %q: "+
			"set cluster.name: %s in winobs's config, or remove your alias", sectionCollector, keyAlias, alias, label, need.Alias, label))
	case need.Alias == "" && aliased && label != v.Cluster.Name:
		conflicts = append(conflicts, fmt.Sprintf("%s: %s = %q: ama-metrics labels every series of the cluster cluster=%q, not the AKS resource name, "+
			"so winobs's cluster.name %q selects nothing: set cluster.name: %q and prometheus.azure.clusterAlias: true in winobs's config",
			sectionCollector, keyAlias, alias, label, v.Cluster.Name, label))
	}
	if len(conflicts) > 0 {
		return nil, notes, conflicts
	}
	s.write(cm.Data)

	out := corev1.ConfigMap{TypeMeta: cm.TypeMeta, Data: cm.Data, BinaryData: cm.BinaryData, Immutable: cm.Immutable}
	out.Name, out.Namespace, out.Labels = cm.Name, cm.Namespace, cm.Labels
	out.ResourceVersion, out.Annotations = cm.ResourceVersion, cm.Annotations
	delete(out.Annotations, "kubectl.kubernetes.io/last-applied-configuration")
	if len(out.Annotations) == 0 {
		out.Annotations = nil
	}
	raw, err := sigyaml.Marshal(out)
	if err != nil {
		return nil, nil, err
	}
	return raw, notes, nil
}

// settings is a settings ConfigMap's sections, v1's or v2's, each a body
// of lines kept as written.
type settings struct {
	v2 bool
	// top: v1's sections and v2's prometheus-collector-settings, by data
	// key; nested: v2's cluster-metrics, its lines before any section
	// (head) and its sections in order.
	top    map[string]*body
	head   []string
	nested []*namedBody
}

type namedBody struct {
	header string // the "<name>: |-" line as written
	name   string
	added  bool // by winobs
	*body
}

// readSettings reads data as ama-metrics does: schema-version v1 (or
// none) or v2; any other is ignored whole by ama-metrics, so refused.
func readSettings(data map[string]string) (*settings, error) {
	schema := strings.ReplaceAll(strings.TrimSpace(data[keySchema]), " ", "")
	s := &settings{top: map[string]*body{}}
	switch schema {
	case "", "v1":
	case "v2":
		s.v2 = true
	default:
		return nil, fmt.Errorf("%s %q: ama-metrics supports v1 and v2 and ignores the whole ConfigMap otherwise: fix it first", keySchema, data[keySchema])
	}
	for key, text := range data {
		if s.v2 && key == clusterMetricsV2 {
			var cur *namedBody
			for _, line := range strings.Split(text, "\n") {
				if t := strings.TrimSpace(line); strings.HasSuffix(t, ": |-") {
					cur = &namedBody{header: line, name: strings.TrimSuffix(t, ": |-"), body: &body{}}
					s.nested = append(s.nested, cur)
					continue
				}
				if cur == nil {
					s.head = append(s.head, line)
					continue
				}
				cur.lines = append(cur.lines, line)
			}
			continue
		}
		s.top[key] = newBody(text)
	}
	return s, nil
}

func newBody(text string) *body {
	if text == "" {
		return &body{}
	}
	return &body{lines: strings.Split(text, "\n")}
}

// lookup is the body of the named section, or an empty one if it is
// missing (not added).
func (s *settings) lookup(name string) *body {
	if !s.v2 || name == sectionCollector {
		if b := s.top[name]; b != nil {
			return b
		}
		return &body{}
	}
	for _, n := range s.nested {
		if n.name == name {
			return n.body
		}
	}
	return &body{}
}

// section is the body of the named section, added empty if it is missing
// (and written only if a line is set).
func (s *settings) section(name string) *body {
	if !s.v2 || name == sectionCollector {
		if s.top[name] == nil {
			s.top[name] = &body{}
		}
		return s.top[name]
	}
	for _, n := range s.nested {
		if n.name == name {
			return n.body
		}
	}
	indent := "    "
	if len(s.nested) > 0 {
		indent = s.nested[0].header[:len(s.nested[0].header)-len(strings.TrimLeft(s.nested[0].header, " "))]
	}
	n := &namedBody{header: indent + name + ": |-", name: name, added: true, body: &body{indent: indent + "  "}}
	s.nested = append(s.nested, n)
	return n.body
}

func (s *settings) scrapeSection() string {
	if s.v2 {
		return sectionScrapeV2
	}
	return sectionScrapeV1
}

// minimal: the minimal ingestion profile is on, ama-metrics' default
// unless "false" is written.
func (s *settings) minimal() bool {
	if s.v2 {
		v, _ := s.lookup(sectionMinimalV2).get(keyMinimalV2)
		return v != "false"
	}
	v, _ := s.lookup(sectionKeep).get(keyMinimalV1)
	return v != "false"
}

// write puts the sections back into data; an empty section winobs did
// not need stays out.
func (s *settings) write(data map[string]string) {
	for key, b := range s.top {
		if len(b.lines) > 0 {
			data[key] = strings.Join(b.lines, "\n")
		}
	}
	if !s.v2 {
		return
	}
	lines := slices.Clone(s.head)
	for _, n := range s.nested {
		if len(n.lines) > 0 || !n.added {
			lines = append(append(lines, n.header), n.lines...)
		}
	}
	data[clusterMetricsV2] = strings.Join(lines, "\n")
}

// body is a section's lines, key = value as ama-metrics' parsers read
// them (shared/helpers.go: the text before the first '=' trimmed is the
// key, the rest trimmed and unquoted the value; '#' lines are comments;
// a later line wins).
type body struct {
	lines  []string
	indent string // of a line added (v2's nested sections are indented)
}

func parseLine(line string) (key, value string, ok bool) {
	t := strings.TrimSpace(line)
	if t == "" || strings.HasPrefix(t, "#") || !strings.Contains(t, "=") {
		return "", "", false
	}
	k, v, _ := strings.Cut(t, "=")
	v = strings.TrimSpace(v)
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		v = v[1 : len(v)-1]
	}
	return strings.TrimSpace(k), v, true
}

func (b *body) get(key string) (value string, found bool) {
	for _, line := range b.lines {
		if k, v, ok := parseLine(line); ok && k == key {
			value, found = v, true
		}
	}
	return value, found
}

// set writes key = value in place of the key's last line, or adds it; a
// string is written between quotes as it is (ama-metrics unquotes, never
// unescapes).
func (b *body) set(key, value string) {
	if value != "true" && value != "false" {
		value = `"` + value + `"`
	}
	for i := len(b.lines) - 1; i >= 0; i-- {
		if k, _, ok := parseLine(b.lines[i]); ok && k == key {
			line := b.lines[i]
			b.lines[i] = line[:len(line)-len(strings.TrimLeft(line, " \t"))] + key + " = " + value
			return
		}
	}
	indent := b.indent
	for _, line := range b.lines {
		if _, _, ok := parseLine(line); ok {
			indent = line[:len(line)-len(strings.TrimLeft(line, " \t"))]
			break
		}
	}
	b.lines = append(b.lines, indent+key+" = "+value)
}
