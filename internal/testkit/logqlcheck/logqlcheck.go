// Package logqlcheck checks winobs's LogQL (dashboard queries and Loki ruler
// rules) against what the agents write: stream labels they set and fields of
// the Alloy event line. Loki's own parser is AGPL and not a dependency; the
// queries keep to a small, standard subset this package can read.
package logqlcheck

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/winobs/winobs/contract"
	"github.com/winobs/winobs/gen/config"
)

// EventLineFields are the keys of the Alloy event line (nested objects as
// LogQL's json parser flattens them), as the team's reference
// (eventlog-and-shippers.md, section 2) lists them.
var EventLineFields = []string{
	"source", "channel", "computer", "event_id", "version", "level", "task", "opCode", "levelText", "taskText",
	"opCodeText", "keywords", "timeCreated", "eventRecordID", "correlation_activityID", "correlation_relatedActivityID",
	"execution_processId", "execution_threadId", "execution_processName", "security_userId", "security_userName",
	"user_data", "event_data", "message",
}

// Stream labels the agents set: event logs get class and computer from the
// event plus job and node (the channel is metadata); pod logs get the pod's labels. With cluster.name
// set, both agents add the cluster label too.
var (
	EventStreamLabels  = contract.EventStreamLabels
	PodLogStreamLabels = contract.PodLogStreamLabels
)

// EventMetadata is the structured metadata of an event entry: its channel.
var EventMetadata = contract.EventMetadata

// PodLogMetadata is the structured metadata the pod pipeline attaches to
// LogMonitor's lines: filterable and groupable without a parser.
var PodLogMetadata = contract.PodLogMetadata

var (
	// StreamSelector matches a stream selector; group 1 is its matchers.
	// Not a line_format template's {{.field}}: a selector's brace follows
	// no other.
	StreamSelector = regexp.MustCompile(`(?:^|[^{])\{([^{}]*)\}`)
	// Grouping matches a by (...) clause; group 1 is its labels.
	Grouping      = regexp.MustCompile(`\bby\s*\(([^)]*)\)`)
	streamMatcher = regexp.MustCompile(`([A-Za-z_]\w*)\s*(?:=~|!~|!=|=)\s*"([^"]*)"`)
	labelFilter   = regexp.MustCompile(`\|\s*([A-Za-z_]\w*)\s*(?:=~|!~|!=|==|>=|<=|=|>|<)`)
	unsupported   = regexp.MustCompile(`\|\s*(?:logfmt|pattern|unpack|label_format|unwrap)\b`)
	// captures are a regexp stage's named groups: labels it adds.
	captures    = regexp.MustCompile(`\(\?P<([A-Za-z_]\w*)>`)
	labelValues = regexp.MustCompile(`^label_values\((.*), *(\w+)\)$`)
)

// Check fails t unless expr selects a winobs stream by its job, uses only
// stream selectors, line filters, | json, line_format and regexp stages and
// label filters, and filters or groups only by stream labels, a pod log's
// structured metadata, (after | json) event line fields or a regexp
// stage's named groups (the detections read EventData fields so; a real
// Loki runs them in tests/loki). A
// Grafana label_values(selector, label) query must name a stream label.
func Check(t *testing.T, cfg *config.Config, where, expr string) {
	t.Helper()
	orig := expr
	if m := labelValues.FindStringSubmatch(expr); m != nil {
		expr = m[1] + " by (" + m[2] + ")"
	}
	sel := StreamSelector.FindStringSubmatch(expr)
	if sel == nil {
		t.Errorf("%s: no stream selector in %q", where, orig)
		return
	}
	var stream, fields, metadata []string
	for _, m := range streamMatcher.FindAllStringSubmatch(sel[1], -1) {
		if m[1] == contract.LabelJob {
			switch m[2] {
			case cfg.Logs.EventsJob:
				stream, fields, metadata = EventStreamLabels, EventLineFields, EventMetadata
			case cfg.Logs.PodLogsJob:
				stream, metadata = PodLogStreamLabels, PodLogMetadata
			}
		}
	}
	if stream == nil {
		t.Errorf("%s: %q selects no winobs stream by job", where, orig)
		return
	}
	stream = append(slices.Clone(stream), cfg.Cluster.Label)
	for _, m := range streamMatcher.FindAllStringSubmatch(sel[1], -1) {
		if !slices.Contains(stream, m[1]) {
			t.Errorf("%s: stream label %q is not set by the agents", where, m[1])
		}
	}
	if unsupported.MatchString(expr) {
		t.Errorf("%s: %q uses more than stream selectors, line filters, | json, line_format, regexp and label filters", where, orig)
	}
	usable := append(slices.Clone(stream), metadata...)
	for _, m := range captures.FindAllStringSubmatch(expr, -1) {
		usable = append(usable, m[1])
	}
	if strings.Contains(expr, "| json") {
		usable = append(usable, fields...)
	}
	var names []string
	for _, m := range labelFilter.FindAllStringSubmatch(expr, -1) {
		names = append(names, m[1])
	}
	for _, m := range Grouping.FindAllStringSubmatch(expr, -1) {
		for _, l := range strings.Split(m[1], ",") {
			names = append(names, strings.TrimSpace(l))
		}
	}
	for _, n := range names {
		if !slices.Contains(usable, n) {
			t.Errorf("%s: %q uses %q, which is neither a stream label, structured metadata nor an event line field", where, orig, n)
		}
	}
}

// selectorMatcher and filterMatcher read one matcher of a stream selector or
// a label filter: its name, operator and quoted value.
var (
	selectorMatcher = regexp.MustCompile(`(\w+)\s*(=~|!~|!=|=)\s*("(?:[^"\\]|\\.)*")`)
	filterMatcher   = regexp.MustCompile(`\|\s*(\w+)\s*(=~|!~|!=|=)\s*("(?:[^"\\]|\\.)*")`)
)

// Selects applies a query's stream selector to an entry's stream labels and
// its label filters to the labels and structured metadata together, as Loki
// does for the subset winobs's queries use: a regex is anchored, a missing
// name is "". It lets a test hold a Loki rule against entries an agent
// really produced.
func Selects(query string, labels, metadata map[string]string) (bool, error) {
	sel := StreamSelector.FindStringSubmatchIndex(query)
	if sel == nil {
		return false, fmt.Errorf("no stream selector in %q", query)
	}
	all := maps.Clone(labels)
	maps.Copy(all, metadata)
	for _, part := range []struct {
		matchers [][]string
		values   map[string]string
	}{
		{selectorMatcher.FindAllStringSubmatch(query[sel[2]:sel[3]], -1), labels},
		{filterMatcher.FindAllStringSubmatch(query[sel[1]:], -1), all},
	} {
		for _, m := range part.matchers {
			want, err := strconv.Unquote(m[3])
			if err != nil {
				return false, fmt.Errorf("%s: %w", m[0], err)
			}
			have := part.values[m[1]]
			var ok bool
			switch m[2] {
			case "=", "!=":
				ok = (have == want) == (m[2] == "=")
			default:
				re, err := regexp.Compile("^(?:" + want + ")$")
				if err != nil {
					return false, fmt.Errorf("%s: %w", m[0], err)
				}
				ok = re.MatchString(have) == (m[2] == "=~")
			}
			if !ok {
				return false, nil
			}
		}
	}
	return true, nil
}
