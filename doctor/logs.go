package doctor

// The checks of the log pipeline, on Loki.

import (
	"context"
	"fmt"
	"time"

	"github.com/winobs/winobs/contract"
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
