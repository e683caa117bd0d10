package doctor

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/winobs/winobs/gen/rules"
)

// Status is a check's outcome.
type Status string

// Outcomes of a check.
const (
	Pass Status = "pass"
	Fail Status = "fail"
	Skip Status = "skip" // nothing to check, or it depends on a check that failed (named in its evidence)
)

// Check is one item of the checklist: what was found, and how to fix it.
type Check struct {
	ID       string   `json:"id"`
	Title    string   `json:"title"`
	Status   Status   `json:"status"`
	Evidence []string `json:"evidence,omitempty"`
	Fix      string   `json:"fix,omitempty"`
}

// Report is every check of one run.
type Report struct {
	Prometheus string  `json:"prometheus"`
	Loki       string  `json:"loki,omitempty"`
	Checks     []Check `json:"checks"`
}

// OK reports whether no check failed: a skipped check had nothing to check
// (its evidence says why, naming the check that found the cause).
func (r Report) OK() bool {
	for _, c := range r.Checks {
		if c.Status == Fail {
			return false
		}
	}
	return true
}

// listed is how many names evidence lists before "and N more".
const listed = 10

// names lists up to `listed` names, sorted, and how many more there are.
func names(ns []string) string {
	ns = slices.Clone(ns)
	sort.Strings(ns)
	ns = slices.Compact(ns)
	if len(ns) > listed {
		return strings.Join(ns[:listed], ", ") + fmt.Sprintf(" and %d more", len(ns)-listed)
	}
	return strings.Join(ns, ", ")
}

// runbook is an alert's runbook link, as the rules' runbook_url gives it
// (alerts.runbookURL).
func (r *run) runbook(alert string) string { return rules.RunbookURL(r.v.RunbookURL, alert) }

// skip marks c skipped, saying why.
func skip(c Check, why string) Check {
	c.Status, c.Evidence, c.Fix = Skip, append(c.Evidence, why), ""
	return c
}

// noExporter is why a check of exporter data has nothing to check.
const noExporter = "no exporter target is up: nothing to check (see windows-nodes-scraped)"

// groupMissing is why a check of a rule group's output has nothing to check.
func groupMissing(group string) string {
	return "the " + group + " group is not loaded: nothing to check (see rules-loaded)"
}

// label collects one label's values from samples.
func label(ss []Sample, name string) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Metric[name])
	}
	return out
}

// failed turns a query error into a failed check.
func failed(c Check, err error) Check {
	if e := (*Error)(nil); errors.As(err, &e) && e.Limit() != "" {
		c.Status = Skip
		c.Evidence = append(c.Evidence, fmt.Sprintf("%s refused the answer as too large, so nothing was checked: %s", e.API, err))
		c.Fix = "raise " + e.Limit() + " for doctor's queries, or check this by hand"
		return c
	}
	c.Status, c.Evidence = Fail, append(c.Evidence, err.Error())
	return c
}

func orNode(node string) string {
	if node == "" {
		return ""
	}
	return " (" + node + ")"
}

func ago(now, t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return now.Sub(t).Round(time.Second).String() + " ago"
}

func countIn(ss []Sample) (int, error) {
	switch len(ss) {
	case 0:
		return 0, nil
	case 1:
		return countOf(ss[0])
	}
	return 0, fmt.Errorf("a count answered %d series, not one: not an answer doctor can believe", len(ss))
}

// countOf reads one sample of a count.
func countOf(s Sample) (int, error) {
	if s.Value < 0 || s.Value != math.Trunc(s.Value) || s.Value > 1e9 {
		return 0, fmt.Errorf("a count of %g: not an answer doctor can believe", s.Value)
	}
	return int(s.Value), nil
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}

// verdict fails c with the problems first in its evidence and fix, or
// passes it when there are none.
func verdict(c Check, problems []string, fix string) Check {
	if len(problems) > 0 {
		c.Status, c.Evidence, c.Fix = Fail, append(problems, c.Evidence...), fix
		return c
	}
	c.Status = Pass
	return c
}
