package doctor

// The checks of the log pipeline, on Loki.

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/winobs/winobs/contract"
	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/gen/rules"
	"github.com/winobs/winobs/gen/vocab"
)

// metadataFix is what to do when Loki refuses the layout's metadata.
const metadataFix = "allow it: limits_config.allow_structured_metadata: true (Loki 3.0+ whose active schema is v13 on tsdb, and no tenant override turning it off); " +
	"or render winobs with logs.structuredMetadata: false and apply it (kubectl apply -k out, the Loki rules too: docs/loki.md). " +
	"Until then Alloy drops every event batch (it retries only 429 and 5xx) and the eventlog-shipper holds every event"

// structuredMetadata: the Loki keeps the structured metadata the rendered
// layout sends (logs.structuredMetadata), as its /config says (and its
// version: 2.x keeps none); and no tenant's entries were discarded for it,
// where Prometheus scrapes Loki (loki_discarded_samples_total, whose
// reason is the shipper's push error reason too). A Loki whose /config is
// not served (a gateway) and that Prometheus does not scrape is not known:
// a skip saying so.
func (r *run) structuredMetadata(ctx context.Context, c Check) Check {
	version, _ := r.loki.BuildInfo(ctx)
	if !r.v.Terms.StructuredMetadata() {
		c.Status, c.Evidence = Pass, []string{"the agents send no structured metadata (logs.structuredMetadata: false): a stream a channel of a node, which any Loki takes"}
		if allowed, err := r.loki.LokiAllowsMetadata(ctx); err == nil && allowed {
			c.Evidence = append(c.Evidence, "this Loki keeps structured metadata: logs.structuredMetadata: true puts a node's events in two streams instead of one a channel (docs/loki.md)")
		}
		return c
	}
	refused := func(evidence ...string) Check {
		r.metadataRefused = true
		c.Status, c.Evidence, c.Fix = Fail, evidence, metadataFix
		return c
	}
	if major, _, ok := strings.Cut(version, "."); ok && (major == "2" || major == "1") {
		return refused(fmt.Sprintf("Loki %s keeps no structured metadata (3.0 brought it), and the agents send each event's channel as metadata", version))
	}
	allowed, cfgErr := r.loki.LokiAllowsMetadata(ctx)
	if cfgErr == nil && !allowed {
		return refused(fmt.Sprintf("Loki %s's /config: limits_config has no allow_structured_metadata: true (Loki writes it only while it is true), "+
			"so it answers every push carrying the channel as metadata with a 400", version))
	}
	// Loki's own count, per tenant, where Prometheus scrapes Loki: a
	// tenant override turns it off where /config cannot tell.
	if r.prom != nil {
		sel := vocab.Selector{vocab.Eq(contract.LabelReason, contract.PushDisallowedMetadata)}
		if t := r.loki.auth.Tenant; t != "" {
			sel = sel.With(vocab.Eq("tenant", t))
		}
		if ss, err := r.prom.Query(ctx, fmt.Sprintf(`sum by (tenant) (increase(%s[1h])) > 0`, sel.Of("loki_discarded_samples_total"))); err == nil && len(ss) > 0 {
			var tenants []string
			for _, s := range ss {
				tenants = append(tenants, fmt.Sprintf("%s (%.0f)", s.Metric["tenant"], s.Value))
			}
			return refused("Loki discarded entries for carrying structured metadata in the last hour (loki_discarded_samples_total{reason=\"" +
				contract.PushDisallowedMetadata + "\"}), tenants " + names(tenants))
		}
	}
	if cfgErr != nil {
		return skip(c, fmt.Sprintf("cannot read Loki's /config (%v), and no Prometheus series of loki_discarded_samples_total says it refused metadata: "+
			"whether it keeps structured metadata is not known here, nothing to check (the eventlog-shipper's push_errors_total{reason=%q} and Alloy's log tell)", cfgErr, contract.PushDisallowedMetadata))
	}
	c.Status, c.Evidence = Pass, []string{fmt.Sprintf("Loki %s keeps structured metadata (limits_config.allow_structured_metadata: true); a tenant override is not read here", version)}
	return c
}

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

// detectionInputs: every Loki detection selects its events as they arrive.
// For each channel the rendered detections read, the detections' own
// selection (vocab's Channels: its class, the channel as metadata or a
// stream label, as rendered) counts the day's events; a channel none of
// whose events it selects while they are there under other labels is a ✗
// naming them: another spelling ("security"), a collector's
// "ForwardedEvents" (an agent that labels by its subscription), or another
// layout (streams without the class: an older winobs's agent, grafana's
// k8s-monitoring windowsEventLogs, a user's own Alloy). LogQL matchers are
// case-sensitive. A channel with no event at all is quiet (a node with no
// failed logon forwards no Security event), said in the evidence.
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
	// What arrives, by channel and class (metadata or label alike): a
	// handful of series; Loki's label-values API lists no metadata.
	ss, err := r.loki.Query(ctx, fmt.Sprintf(`sum by (%s, %s) (count_over_time(%s [24h]))`, contract.LabelChannel, contract.LabelClass, r.lt.AllEvents()))
	if err != nil {
		return failed(c, err)
	}
	if len(ss) == 0 {
		return skip(c, "no event stream in the last day (see loki-events): nothing to check")
	}
	c.Status = Pass
	var quiet []string
	for _, ch := range order {
		n, err := r.lokiCount(ctx, fmt.Sprintf(`sum(count_over_time(%s [24h]))`, r.lt.Channels(nil, ch)))
		if err != nil {
			return failed(c, err)
		}
		if n > 0 {
			continue
		}
		var elsewhere []string
		for _, s := range ss {
			p, class := s.Metric[contract.LabelChannel], s.Metric[contract.LabelClass]
			switch {
			case p == ch && class == contract.EventClass(ch):
				// Where the class and channel are right and the
				// detections still select none, the layout differs: the
				// channel is metadata where a stream label is selected.
				elsewhere = append(elsewhere, fmt.Sprintf("channel=%q (structured metadata)", p))
			case p == "ForwardedEvents":
				elsewhere = append(elsewhere, fmt.Sprintf("channel=%q", p))
			case strings.EqualFold(p, ch):
				elsewhere = append(elsewhere, fmt.Sprintf("channel=%q, class=%q", p, class))
			}
		}
		if len(elsewhere) == 0 {
			quiet = append(quiet, fmt.Sprintf("%s (%s)", ch, strings.Join(readers[ch], ", ")))
			continue
		}
		c.Status = Fail
		c.Evidence = append(c.Evidence, fmt.Sprintf("%s select %s, but its events arrive as {%s}: they never fire",
			names(readers[ch]), r.lt.Channels(nil, ch), strings.Join(elsewhere, "}, {")))
	}
	if c.Status == Fail {
		c.Fix = "the detections select the class and channel winobs's agents write: an agent that labels by its config's spelling or by ForwardedEvents, " +
			"or writes another layout (no class label: an older winobs, grafana's k8s-monitoring windowsEventLogs, an Alloy of your own), leaves them blind; " +
			"run winobs's agents (both write the event's own channel, as Windows spells it, and its class), or render the layout your agents write (logs.structuredMetadata)"
	}
	if len(quiet) > 0 {
		c.Evidence = append(c.Evidence, "no event in the last day, so no input yet (quiet nodes forward none): "+strings.Join(quiet, "; "))
	}
	if c.Status == Pass && len(quiet) < len(order) {
		c.Evidence = append([]string{fmt.Sprintf("%d of %d channels the detections read arrive as they select", len(order)-len(quiet), len(order))}, c.Evidence...)
	}
	return c
}

// lokiCount is the value of an instant LogQL query's one sample, 0 for
// none.
func (r *run) lokiCount(ctx context.Context, query string) (float64, error) {
	ss, err := r.loki.Query(ctx, query)
	if err != nil || len(ss) == 0 {
		return 0, err
	}
	return ss[0].Value, nil
}
