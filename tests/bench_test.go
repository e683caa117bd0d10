package tests

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/promslog"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/prometheus/prometheus/rules"

	rulespkg "github.com/winobs/winobs/gen/rules"
	"github.com/winobs/winobs/gen/vocab"
)

const (
	benchNodes      = 50
	fleetNodes      = 1000 // the fleet's rule benchmark
	benchContainers = 60   // per node, 2 per pod sharing one HNS endpoint
)

// clusterSpec is one synthetic cluster: its size, its job names and, for a
// Prometheus that scrapes several clusters, its cluster label.
type clusterSpec struct {
	nodes, containers         int
	linuxNodes                int // kube-state-metrics' series only, as many containers each
	exporterJob, ksmJob       string
	clusterLabel, clusterName string // both empty: no cluster label
}

// benchCluster is the benchmarks' cluster, with the default job names.
var benchCluster = clusterSpec{nodes: benchNodes, containers: benchContainers, exporterJob: "windows-exporter", ksmJob: "kube-state-metrics"}

// syntheticCluster returns a load script for the clusters (benchCluster when
// none is given): each node a Windows node with its containers, scraped by
// the kube-prometheus-stack ServiceMonitor (exported_* labels), plus
// kube-state-metrics series for every container and node, steps+1 samples
// 30 s apart (the usual scrape interval, so [1m] ranges hold two samples).
func syntheticCluster(steps int, clusters ...clusterSpec) (script string, series int) {
	if len(clusters) == 0 {
		clusters = []clusterSpec{benchCluster}
	}
	var b strings.Builder
	b.WriteString("load 30s\n")
	// Values are "<start>[+<delta>]", repeated for every step.
	add := func(s, values string) {
		fmt.Fprintf(&b, "  %s %sx%d\n", s, values, steps)
		series++
	}
	for _, spec := range clusters {
		spec.write(add)
	}
	return b.String(), series
}

func (spec clusterSpec) write(add func(series, values string)) {
	cluster := ""
	if spec.clusterLabel != "" {
		cluster = fmt.Sprintf(`,%s="%s"`, spec.clusterLabel, spec.clusterName)
	}
	ksmTarget := fmt.Sprintf(`job="%s",instance="10.244.0.9:8080"%s`, spec.ksmJob, cluster)
	for n := range spec.nodes {
		ip := fmt.Sprintf("10.1.%d.%d", n/250, n%250+1)
		node := fmt.Sprintf("win-%02d", n)
		target := fmt.Sprintf(`job="%s",instance="%s:9182",namespace="monitoring",pod="kps-prometheus-windows-exporter-%05d",container="windows-exporter",endpoint="metrics",service="kps-prometheus-windows-exporter"%s`, spec.exporterJob, ip, n, cluster)
		add(`windows_exporter_build_info{`+target+`,version="0.31.8"}`, "1")
		add(`windows_memory_committed_bytes{`+target+`}`, "6442450944")
		add(`windows_memory_commit_limit{`+target+`}`, "12884901888")
		add(`windows_memory_physical_total_bytes{`+target+`}`, "8589934592")
		add(`windows_memory_available_bytes{`+target+`}`, "2147483648")
		add(`windows_memory_swap_page_operations_total{`+target+`}`, "0+3000")
		add(`windows_system_boot_time_timestamp{`+target+`}`, "-86400")
		add(`up{`+target+`}`, "1")
		// Read only by kube-prometheus-stack's node rules: without them its
		// rules would look cheap for returning nothing.
		for _, m := range []string{"cache", "modified_page_list", "standby_cache_core", "standby_cache_normal_priority", "standby_cache_reserve"} {
			add(`windows_memory_`+m+`_bytes{`+target+`}`, "268435456")
		}
		add(`windows_time_computed_time_offset_seconds{`+target+`}`, "0.002")
		add(`windows_time_ntp_client_time_sources{`+target+`}`, "1")
		add(`windows_pagefile_free_bytes{`+target+`,file="C:\\pagefile.sys"}`, "4294967296")
		add(`windows_pagefile_limit_bytes{`+target+`,file="C:\\pagefile.sys"}`, "8589934592")
		for _, vol := range []string{"C:", "HarddiskVolume1"} {
			v := fmt.Sprintf(`%s,volume="%s"`, target, vol)
			add(`windows_logical_disk_read_seconds_total{`+v+`}`, "0+1.5")
			add(`windows_logical_disk_write_seconds_total{`+v+`}`, "0+3")
			add(`windows_logical_disk_size_bytes{`+v+`}`, "137438953472")
			add(`windows_logical_disk_free_bytes{`+v+`}`, "68719476736")
			add(`windows_logical_disk_read_latency_seconds_total{`+v+`}`, "0+0.6")
			add(`windows_logical_disk_write_latency_seconds_total{`+v+`}`, "0+0.9")
			add(`windows_logical_disk_reads_total{`+v+`}`, "0+300")
			add(`windows_logical_disk_writes_total{`+v+`}`, "0+450")
			add(`windows_logical_disk_idle_seconds_total{`+v+`}`, "0+27")
		}
		for _, nic := range []string{"vEthernet (Ethernet)", "Ethernet"} {
			v := fmt.Sprintf(`%s,nic="%s"`, target, nic)
			add(`windows_net_bytes_total{`+v+`}`, "0+300000")
			add(`windows_net_bytes_received_total{`+v+`}`, "0+200000")
			add(`windows_net_bytes_sent_total{`+v+`}`, "0+100000")
			add(`windows_net_packets_total{`+v+`}`, "0+3000")
			add(`windows_net_packets_received_errors_total{`+v+`}`, "0")
			add(`windows_net_packets_outbound_errors_total{`+v+`}`, "0")
			add(`windows_net_packets_received_discarded_total{`+v+`}`, "0+0.5")
			add(`windows_net_packets_outbound_discarded_total{`+v+`}`, "0")
		}
		for core := range 8 {
			add(fmt.Sprintf(`windows_cpu_time_total{%s,core="0,%d",mode="idle"}`, target, core), "0+15")
			add(fmt.Sprintf(`windows_cpu_time_total{%s,core="0,%d",mode="user"}`, target, core), "0+10")
		}
		for _, svc := range []string{"kubelet", "containerd"} {
			add(fmt.Sprintf(`windows_service_state{%s,name="%s",state="running"}`, target, svc), "1")
		}
		for _, c := range []string{"cpu", "memory", "container", "service"} {
			add(fmt.Sprintf(`windows_exporter_collector_success{%s,collector="%s"}`, target, c), "1")
			add(fmt.Sprintf(`windows_exporter_collector_duration_seconds{%s,collector="%s"}`, target, c), "0.05")
		}
		// Every tenth node ships its events with the eventlog-shipper, whose
		// metrics arrive through the exporter's textfile collector.
		if n%10 == 0 {
			for _, ch := range []string{"System", "Application"} {
				c := fmt.Sprintf(`%s,channel="%s"`, target, ch)
				add(`winobs_shipper_events_read_total{`+c+`}`, "0+60")
				add(`winobs_shipper_events_sent_total{`+c+`}`, "0+60")
				add(`winobs_shipper_checkpoint_timestamp_seconds{`+c+`}`, "0+30")
				add(`winobs_shipper_pending_events{`+c+`}`, "3")
				add(`winobs_shipper_resubscribes_total{`+c+`}`, "0")
				add(`winobs_shipper_render_errors_total{`+c+`}`, "0")
			}
			add(`winobs_shipper_events_dropped_total{`+target+`,reason="too_large"}`, "0+1")
			add(`winobs_shipper_push_errors_total{`+target+`,status="429"}`, "0+1")
			add(`winobs_shipper_push_retries_total{`+target+`}`, "0+1")
			add(`winobs_shipper_in_flight_bytes{`+target+`}`, "65536")
			for i, le := range []string{"0.1", "0.5", "1", "+Inf"} {
				add(fmt.Sprintf(`winobs_shipper_push_duration_seconds_bucket{%s,le="%s"}`, target, le), fmt.Sprintf("0+%d", 10+i))
			}
		}
		add(fmt.Sprintf(`kube_node_info{%s,node="%s",internal_ip="%s",os_image="Windows Server 2025 Datacenter"}`, ksmTarget, node, ip), "1")
		add(fmt.Sprintf(`kube_node_spec_unschedulable{%s,node="%s"}`, ksmTarget, node), "0")
		for c := range spec.containers {
			pod := fmt.Sprintf("app-%02d-%02d", n, c/2)
			name := []string{"app", "sidecar"}[c%2]
			id := fmt.Sprintf("containerd://%064x", n*1000+c)
			exported := fmt.Sprintf(`container_id="%s",exported_namespace="ns-%d",exported_pod="%s",exported_container="%s"`, id, c/2%10, pod, name)
			iface := fmt.Sprintf(`interface="%08X-0000-0000-0000-%012X"`, n, c/2)
			add(`windows_container_available{`+target+`,`+exported+`,hostprocess="false"}`, "1")
			add(`windows_container_memory_usage_commit_bytes{`+target+`,`+exported+`}`, "102760448")
			add(`windows_container_memory_usage_private_working_set_bytes{`+target+`,`+exported+`}`, "44040192")
			add(`windows_container_cpu_usage_seconds_total{`+target+`,`+exported+`}`, "0+15")
			add(`windows_container_network_receive_bytes_total{`+target+`,`+exported+`,`+iface+`}`, "0+30000")
			add(`windows_container_network_transmit_bytes_total{`+target+`,`+exported+`,`+iface+`}`, "0+15000")
			ksmContainer(add, ksmTarget, node, n, c, id, c != spec.containers-1) // one container per node without a memory limit
		}
	}
	// Linux nodes: what kube-state-metrics reports of them, which every join
	// with kube-state-metrics reads before it keeps the Windows containers.
	for n := spec.nodes; n < spec.nodes+spec.linuxNodes; n++ {
		node := fmt.Sprintf("linux-%03d", n)
		add(fmt.Sprintf(`kube_node_info{%s,node="%s",internal_ip="10.2.%d.%d",os_image="Ubuntu 24.04.3 LTS"}`, ksmTarget, node, n/250, n%250+1), "1")
		add(fmt.Sprintf(`kube_node_spec_unschedulable{%s,node="%s"}`, ksmTarget, node), "0")
		for c := range spec.containers {
			ksmContainer(add, ksmTarget, node, n, c, fmt.Sprintf("containerd://%064x", n*1000+c), true)
		}
	}
}

// ksmContainer adds kube-state-metrics' series for container c of node n:
// two containers a pod, ten namespaces.
func ksmContainer(add func(series, values string), ksmTarget, node string, n, c int, id string, memoryLimit bool) {
	pod := fmt.Sprintf("app-%02d-%02d", n, c/2)
	name := []string{"app", "sidecar"}[c%2]
	ksm := fmt.Sprintf(`%s,namespace="ns-%d",pod="%s",container="%s",uid="%08x-0000-4000-8000-000000000000"`, ksmTarget, c/2%10, pod, name, n*1000+c/2)
	add(`kube_pod_container_info{`+ksm+`,image="ghcr.io/example/app:1",container_id="`+id+`"}`, "1")
	add(`kube_pod_container_status_restarts_total{`+ksm+`}`, "0")
	if memoryLimit {
		add(`kube_pod_container_resource_limits{`+ksm+`,node="`+node+`",resource="memory",unit="byte"}`, "268435456")
	}
	add(`kube_pod_container_resource_requests{`+ksm+`,node="`+node+`",resource="memory",unit="byte"}`, "268435456")
	add(`kube_pod_container_resource_limits{`+ksm+`,node="`+node+`",resource="cpu",unit="core"}`, "1")
	add(`kube_pod_container_resource_requests{`+ksm+`,node="`+node+`",resource="cpu",unit="core"}`, "0.5")
}

// kpsRules is kube-prometheus-stack's Windows recording rules, the baseline
// the recording-rule benchmark compares against.
const kpsRules = "../testdata/kube-prometheus-stack/windows-rules-88.5.3.yaml"

// ruleBench is the synthetic cluster in a TSDB with a rule manager over it.
type ruleBench struct {
	suite  *promqltest.LazyLoader
	engine *promql.Engine
	mgr    *rules.Manager
	inputs int
}

// benchEvalTime is the evaluation time of the timed runs: the end of the
// synthetic data.
var benchEvalTime = time.Unix(0, 0).Add(10 * time.Minute)

func newRuleBench(b *testing.B) *ruleBench { return newBench(b, benchEvalTime) }

// newBench loads the synthetic clusters (benchCluster when none is given) up
// to end (30 s steps).
func newBench(b testing.TB, end time.Time, clusters ...clusterSpec) *ruleBench {
	b.Helper()
	script, inputs := syntheticCluster(int(end.Sub(time.Unix(0, 0))/(30*time.Second)), clusters...)
	suite, err := promqltest.NewLazyLoader(script, promqltest.LazyLoaderOpts{Parser: promqlParser})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = suite.Close() })
	suite.WithSamplesTill(end, func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	})
	// Prometheus' own defaults, not the test engine's small sample limit.
	engine := promql.NewEngine(promql.EngineOpts{
		MaxSamples: 50_000_000, Timeout: 2 * time.Minute, LookbackDelta: 5 * time.Minute,
		NoStepSubqueryIntervalFn: func(int64) int64 { return time.Minute.Milliseconds() }, Parser: promqlParser,
	})
	mgr := rules.NewManager(&rules.ManagerOptions{
		QueryFunc:    rules.EngineQueryFunc(engine, suite.Storage()),
		AppendableV2: suite.Storage(),
		Context:      context.Background(),
		NotifyFunc:   func(context.Context, string, ...*rules.Alert) {},
		Logger:       promslog.NewNopLogger(),
		Parser:       promqlParser,
	})
	return &ruleBench{suite: suite, engine: engine, mgr: mgr, inputs: inputs}
}

// load returns the groups of the rule files, in file order.
func (rb *ruleBench) load(b testing.TB, files ...string) []*rules.Group {
	b.Helper()
	m, errs := rb.mgr.LoadGroups(30*time.Second, labels.EmptyLabels(), "", nil, false, files...)
	if errs != nil {
		b.Fatal(errs)
	}
	var order []string
	for _, g := range ruleFileGroups(b, files...) {
		order = append(order, g.Name)
	}
	return orderGroups(m, order)
}

// eval evaluates the groups at ts, as a ruler does, and fails on any rule
// error. It returns the wall time of the evaluation.
func (rb *ruleBench) eval(b testing.TB, groups []*rules.Group, ts time.Time) time.Duration {
	took, _ := rb.evalCPU(b, groups, ts)
	return took
}

// evalCPU is eval that also returns the CPU time the process used meanwhile,
// the garbage collector's work on other cores included: what a ruler pays.
func (rb *ruleBench) evalCPU(b testing.TB, groups []*rules.Group, ts time.Time) (wall, cpu time.Duration) {
	cpu0, start := processCPU(), time.Now()
	for _, g := range groups {
		g.Eval(rb.suite.Context(), ts)
	}
	took, cpu := time.Since(start), processCPU()-cpu0
	for _, g := range groups {
		for _, r := range g.Rules() {
			if err := r.LastError(); err != nil {
				b.Fatalf("%s: %v", r.Name(), err)
			}
		}
	}
	return took, cpu
}

// warmUp evaluates the groups every 30 s over the last five minutes of data,
// so records read with a range (a rate of a record) have their history.
func (rb *ruleBench) warmUp(b *testing.B, groups ...[]*rules.Group) {
	for ts := benchEvalTime.Add(-5 * time.Minute); !ts.After(benchEvalTime); ts = ts.Add(30 * time.Second) {
		for _, g := range groups {
			rb.eval(b, g, ts)
		}
	}
}

// count returns the number of series a PromQL expression returns at the
// benchmark's evaluation time.
func (rb *ruleBench) count(b *testing.B, expr string) float64 {
	q, err := rb.engine.NewInstantQuery(rb.suite.Context(), rb.suite.Queryable(), nil, "count("+expr+")", benchEvalTime)
	if err != nil {
		b.Fatal(err)
	}
	res := q.Exec(rb.suite.Context())
	if res.Err != nil {
		b.Fatal(res.Err)
	}
	if v := res.Value.(promql.Vector); len(v) == 1 {
		return v[0].F
	}
	return 0
}

// emptyRecords counts the records of the groups that return no series.
func (rb *ruleBench) emptyRecords(b *testing.B, groups []*rules.Group) (empty []string) {
	for _, g := range groups {
		for _, r := range g.Rules() {
			if rr, ok := r.(*rules.RecordingRule); ok && rb.count(b, "{__name__="+strconv.Quote(rr.Name())+"}") == 0 {
				empty = append(empty, rr.Name())
			}
		}
	}
	return empty
}

// BenchmarkRuleEvaluation times one evaluation of every winobs rule group
// (records, then alerts) over the synthetic cluster and reports the series
// the records produce.
func BenchmarkRuleEvaluation(b *testing.B) {
	rb := newRuleBench(b)
	files, _ := filepath.Glob(filepath.Join(manifests, "rules", "*.yaml"))
	groups := rb.load(b, files...)
	rb.warmUp(b, groups)
	b.ResetTimer()
	for b.Loop() {
		rb.eval(b, groups, benchEvalTime)
	}
	b.StopTimer()

	produced := rb.count(b, `{__name__=~".+:winobs_.+:.+"}`)
	// Per container: info, commit, limit, commit to limit; the one container
	// per node without a memory limit has no limit and no ratio but is in
	// the no-limit record: 4 × 60 - 1 a node. Per node 8, plus one per volume
	// with a drive letter (C:), per adapter (2) and per page file: 13.
	if want := float64(benchNodes*(benchContainers*4-1) + benchNodes*13); produced != want {
		b.Errorf("records produced %v series, want %v", produced, want)
	}
	b.ReportMetric(float64(rb.inputs), "input_series")
	b.ReportMetric(produced, "record_series")
}

// BenchmarkRecordsVsKubePrometheusStack evaluates winobs's recording rules
// and kube-prometheus-stack's Windows recording rules on the same TSDB in
// the same run, alternating, and reports each set's median evaluation time
// and their ratio (ratio), and the ratio of the median CPU time the process
// used meanwhile (cpu_ratio: the garbage collector's work on the other cores
// counts there, not in the wall time). It logs every rule's median, slowest
// first: that is where a ruler's time goes. It runs at 50 and 200 Windows
// nodes, and at 50 among 150 Linux nodes whose containers only
// kube-state-metrics reports, as in a hybrid cluster.
//
// At 1,000 nodes (nodes=1000, the fleet: 800,000 input series) it peaked
// at 5.7-7.2 GiB: make bench runs it alone, under a soft memory limit
// (GOMEMLIMIT), and it reports the process's peak resident memory; a
// pattern naming the smaller sizes never loads it.
func BenchmarkRecordsVsKubePrometheusStack(b *testing.B) {
	for _, size := range []struct{ nodes, linux int }{{benchNodes, 0}, {4 * benchNodes, 0}, {benchNodes, 3 * benchNodes}, {fleetNodes, 0}} {
		spec := benchCluster
		spec.nodes, spec.linuxNodes = size.nodes, size.linux
		name := fmt.Sprintf("nodes=%d", size.nodes)
		if size.linux > 0 {
			name += fmt.Sprintf(",linux=%d", size.linux)
		}
		b.Run(name, func(b *testing.B) { benchRecordsVsKPS(b, spec) })
	}
}

// benchRecordsVsKPS evaluates winobs's records and kube-prometheus-stack's
// Windows records over one synthetic cluster: a cost per node that grows
// with the cluster shows as a ratio that grows with it.
func benchRecordsVsKPS(b *testing.B, spec clusterSpec) {
	rb := newBench(b, benchEvalTime, spec)
	ours := rb.load(b, filepath.Join(manifests, "rules", rulespkg.RecordsGroup+".yaml"))
	theirs := rb.load(b, kpsRules)
	rb.warmUp(b, ours, theirs)
	if empty := rb.emptyRecords(b, ours); len(empty) > 0 {
		b.Fatalf("winobs records with no series: %v", empty)
	}
	// Every Windows container and no Linux one.
	if got, want := rb.count(b, vocab.Records.ContainerInfo), float64(spec.nodes*spec.containers); got != want {
		b.Fatalf("%s has %v series, want %v", vocab.Records.ContainerInfo, got, want)
	}
	kpsEmpty := rb.emptyRecords(b, theirs)

	// The times of one set's evaluations.
	type timed struct {
		groups    []*rules.Group
		wall, cpu []time.Duration
		alloc     []float64 // bytes allocated by one evaluation
	}
	oursT, theirsT := &timed{groups: ours}, &timed{groups: theirs}
	order := [2]*timed{oursT, theirsT}
	perRule := map[string][]time.Duration{}
	b.ResetTimer()
	for b.Loop() {
		// Each set starts from a collected heap, and the order swaps every
		// time (ours, theirs, theirs, ours, ...): a set that follows the
		// collection of the other's garbage (the runtime returning its pages
		// meanwhile) does so as often as the other.
		for _, set := range order {
			runtime.GC()
			alloc0 := allocatedBytes()
			wall, cpu := rb.evalCPU(b, set.groups, benchEvalTime)
			set.wall, set.cpu = append(set.wall, wall), append(set.cpu, cpu)
			set.alloc = append(set.alloc, float64(allocatedBytes()-alloc0))
		}
		order[0], order[1] = order[1], order[0]
		for set, groups := range map[string][]*rules.Group{"winobs": ours, "kps": theirs} {
			for _, g := range groups {
				for _, r := range g.Rules() {
					perRule[set+" "+r.Name()] = append(perRule[set+" "+r.Name()], r.GetEvaluationDuration())
				}
			}
		}
	}
	b.StopTimer()

	type ruleCost struct {
		name string
		d    time.Duration
	}
	var costs []ruleCost
	for name, ds := range perRule {
		costs = append(costs, ruleCost{name, median(ds)})
	}
	slices.SortFunc(costs, func(a, b ruleCost) int { return cmp.Compare(b.d, a.d) })
	var table strings.Builder
	for _, c := range costs {
		fmt.Fprintf(&table, "\n  %8.2f ms  %s", float64(c.d.Microseconds())/1000, c.name)
	}
	b.Logf("median evaluation per rule, slowest first:%s", table.String())
	b.Logf("kube-prometheus-stack records with no series on exporter 0.31: %d %v", len(kpsEmpty), kpsEmpty)

	om, tm := median(oursT.wall), median(theirsT.wall)
	b.ReportMetric(float64(om.Microseconds())/1000, "winobs_ms")
	b.ReportMetric(float64(tm.Microseconds())/1000, "kps_ms")
	b.ReportMetric(float64(om)/float64(tm), "ratio")
	if oc, tc := median(oursT.cpu), median(theirsT.cpu); tc > 0 {
		b.ReportMetric(float64(oc)/float64(tc), "cpu_ratio")
	}
	b.ReportMetric(float64(len(kpsEmpty)), "kps_empty_records")
	b.ReportMetric(float64(rb.inputs), "input_series")
	b.ReportMetric(median(oursT.alloc)/(1<<20), "winobs_alloc_MiB")
	b.ReportMetric(median(theirsT.alloc)/(1<<20), "kps_alloc_MiB")
	b.ReportMetric(float64(peakRSS())/(1<<20), "peak_RSS_MiB")
}

// allocatedBytes is every byte the process has allocated on the heap so
// far (runtime/metrics, no stop of the world).
func allocatedBytes() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// median is the middle of vs (the upper middle of an even count).
func median[T cmp.Ordered](vs []T) T {
	s := slices.Clone(vs)
	slices.Sort(s)
	return s[len(s)/2]
}
