package doctor

// The checks of the log pipeline, on Loki.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/winobs/winobs/config"
	"github.com/winobs/winobs/contract"
	"github.com/winobs/winobs/rules"
	"github.com/winobs/winobs/vocab"
)

// eventsPerNode: every Windows node's events reached Loki in the last hour.
// The node names come from Loki's label-values API, which no series limit
// bounds (a query by node and channel is refused past max_query_series, 500
// by default: 250 nodes of two channels); the channels from a query by
// channel, a handful of series.
func (r *run) eventsPerNode(ctx context.Context, c Check) Check {
	nodes, done := r.streamNodes(ctx, c, r.lt.Events(), r.v.EventsJob,
		fmt.Sprintf("no stream with job %q in the last hour: check logs.eventsJob and loki.url", r.v.EventsJob))
	if done != nil {
		return *done
	}
	ss, err := r.loki.Query(ctx, fmt.Sprintf(`sum by (channel) (count_over_time(%s [1h]))`, r.lt.Events()))
	if err != nil {
		return failed(c, err)
	}
	seen := map[string]bool{}
	for _, n := range nodes {
		seen[n] = true
	}
	var missing []string
	for _, n := range r.windowsNodes {
		if !seen[n] {
			missing = append(missing, n)
		}
	}
	c.Evidence = []string{fmt.Sprintf("%d nodes, channels %s", len(nodes), names(label(ss, contract.LabelChannel)))}
	if len(missing) > 0 {
		c.Status = Fail
		c.Evidence = append(c.Evidence, fmt.Sprintf("%d of %d Windows nodes sent no event: %s", len(missing), len(r.windowsNodes), names(missing)))
		c.Fix = "a node whose agent cannot reach Loki sends nothing: check loki.url from the node's network (not a Service name) and the agent's log; a node with no event of the forwarded levels in the hour is silent too (eventLog.channels)"
		return c
	}
	c.Status = Pass
	return c
}

// noStreams fails c for a job without streams, after telling a tenant that
// holds nothing at all (a wrong tenant answers 200 and empty, like a
// silent cluster) from one that lacks only this job.
func (r *run) noStreams(ctx context.Context, c Check, job, fix string) Check {
	c.Status, c.Fix = Fail, fix
	all, err := r.loki.LabelValues(ctx, contract.LabelJob, "", 24*time.Hour)
	if err != nil {
		return failed(c, err)
	}
	tenant := r.loki.auth.Tenant
	switch {
	case len(all) == 0 && tenant != "":
		c.Evidence = append(c.Evidence, fmt.Sprintf("tenant %q holds no logs at all in the last day", tenant))
		c.Fix = fmt.Sprintf("check the tenant: the agents push as loki.tenant (%q here); a Loki answers an unknown tenant with an empty result", tenant)
	case len(all) == 0:
		c.Evidence = append(c.Evidence, "this Loki holds no logs at all in the last day")
	default:
		c.Evidence = append(c.Evidence, fmt.Sprintf("no stream with job %q; jobs here: %s", job, names(quoteAll(all))))
	}
	return c
}

// podLogs: Windows pod logs reached Loki in the last hour.
func (r *run) podLogs(ctx context.Context, c Check) Check {
	nodes, done := r.streamNodes(ctx, c, r.lt.PodLogs(), r.v.PodLogsJob,
		fmt.Sprintf("no stream with job %q: the Alloy DaemonSet reads C:\\var\\log\\pods on nodes labelled for it (logAgent); check its log", r.v.PodLogsJob))
	if done != nil {
		return *done
	}
	c.Status, c.Evidence = Pass, []string{fmt.Sprintf("lines from %d nodes", len(nodes))}
	return c
}

// streamNodes lists the nodes with streams of sel in the last hour; with
// none (or an error), done is the check saying so.
func (r *run) streamNodes(ctx context.Context, c Check, sel vocab.Selector, job, fix string) (nodes []string, done *Check) {
	nodes, err := r.loki.LabelValues(ctx, contract.LabelNode, sel.String(), time.Hour)
	if err != nil {
		c = failed(c, err)
		return nil, &c
	}
	if len(nodes) == 0 {
		c = r.noStreams(ctx, c, job, fix)
		return nil, &c
	}
	return nodes, nil
}

// detectionInputs: every Loki detection's channel arrives under the channel
// value (structured metadata) it selects. LogQL matchers are case-sensitive, so events that
// arrive as channel="security", or as a collector's "ForwardedEvents" (an
// agent that labels by its subscription, not the event's own channel),
// leave the detections blind while loki-events passes: a ✗ naming each.
// A channel with no stream at all is quiet (a node with no failed logon
// forwards no Security event), said in the evidence.
func (r *run) detectionInputs(ctx context.Context, c Check) Check {
	groups, err := rules.LokiGroups(r.v.Rules)
	if err != nil {
		return failed(c, err)
	}
	rendered := map[string]bool{}
	for _, g := range groups.Groups {
		for _, rule := range g.Rules {
			rendered[rule.Alert] = true
		}
	}
	// The channels each rendered detection reads: config's table, which
	// rules' tests hold to the queries.
	readers := map[string][]string{} // channel -> detections
	var order []string
	for _, er := range config.EventReaders {
		if !rendered[er.Alert] {
			continue
		}
		if _, ok := readers[er.Channel]; !ok {
			order = append(order, er.Channel)
		}
		readers[er.Channel] = append(readers[er.Channel], er.Alert)
	}
	// The channel is structured metadata, which Loki's label-values API
	// does not list: a query by channel, a handful of series.
	ss, err := r.loki.Query(ctx, fmt.Sprintf(`sum by (%s) (count_over_time(%s [24h]))`, contract.LabelChannel, r.lt.AllEvents()))
	if err != nil {
		return failed(c, err)
	}
	present := label(ss, contract.LabelChannel)
	if len(present) == 0 {
		return skip(c, "no event stream in the last day (see loki-events): nothing to check")
	}
	c.Status = Pass
	var quiet []string
	for _, ch := range order {
		if slices.Contains(present, ch) {
			continue
		}
		var elsewhere []string
		for _, p := range present {
			if strings.EqualFold(p, ch) || p == "ForwardedEvents" {
				elsewhere = append(elsewhere, p)
			}
		}
		if len(elsewhere) == 0 {
			quiet = append(quiet, fmt.Sprintf("%s (%s)", ch, strings.Join(readers[ch], ", ")))
			continue
		}
		c.Status = Fail
		c.Evidence = append(c.Evidence, fmt.Sprintf("%s select channel=%q, but events arrive as %s: they never fire",
			names(readers[ch]), ch, names(quoteAll(elsewhere))))
	}
	if c.Status == Fail {
		c.Fix = "an agent labels the stream by its config's spelling or by ForwardedEvents: run winobs's agents (both label by the event's own channel, as Windows spells it) and write channel names as Windows does"
	}
	if len(quiet) > 0 {
		c.Evidence = append(c.Evidence, "no stream in the last day, so no input yet (quiet nodes forward none): "+strings.Join(quiet, "; "))
	}
	if c.Status == Pass && len(quiet) < len(order) {
		c.Evidence = append([]string{fmt.Sprintf("%d of %d channels the detections read arrive as they select", len(order)-len(quiet), len(order))}, c.Evidence...)
	}
	return c
}
