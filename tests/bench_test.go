package tests

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/promslog"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/prometheus/prometheus/rules"
)

const (
	benchNodes      = 50
	benchContainers = 60 // per node, 2 per pod sharing one HNS endpoint
)

// syntheticCluster returns a load script for benchNodes Windows nodes with
// benchContainers containers each, scraped by the kube-prometheus-stack
// ServiceMonitor (exported_* labels), plus kube-state-metrics series for every
// container and node, 11 samples a minute apart.
func syntheticCluster() (script string, series int) {
	var b strings.Builder
	b.WriteString("load 1m\n")
	add := func(s, values string) {
		fmt.Fprintf(&b, "  %s %s\n", s, values)
		series++
	}
	for n := range benchNodes {
		ip := fmt.Sprintf("10.1.%d.%d", n/250, n%250+1)
		node := fmt.Sprintf("win-%02d", n)
		target := fmt.Sprintf(`job="windows-exporter",instance="%s:9182",namespace="monitoring",pod="kps-prometheus-windows-exporter-%05d",container="windows-exporter",endpoint="metrics",service="kps-prometheus-windows-exporter"`, ip, n)
		add(`windows_exporter_build_info{`+target+`,version="0.31.8"}`, "1x10")
		add(`windows_memory_committed_bytes{`+target+`}`, "6442450944x10")
		add(`windows_memory_commit_limit{`+target+`}`, "12884901888x10")
		add(`windows_memory_physical_total_bytes{`+target+`}`, "8589934592x10")
		add(`windows_memory_available_bytes{`+target+`}`, "2147483648x10")
		add(`windows_memory_swap_page_operations_total{`+target+`}`, "0+6000x10")
		add(`windows_system_boot_time_timestamp{`+target+`}`, "-86400x10")
		add(`up{`+target+`}`, "1x10")
		for core := range 8 {
			add(fmt.Sprintf(`windows_cpu_time_total{%s,core="0,%d",mode="idle"}`, target, core), "0+30x10")
			add(fmt.Sprintf(`windows_cpu_time_total{%s,core="0,%d",mode="user"}`, target, core), "0+20x10")
		}
		for _, svc := range []string{"kubelet", "containerd"} {
			add(fmt.Sprintf(`windows_service_state{%s,name="%s",state="running"}`, target, svc), "1x10")
		}
		for _, c := range []string{"cpu", "memory", "container", "service"} {
			add(fmt.Sprintf(`windows_exporter_collector_success{%s,collector="%s"}`, target, c), "1x10")
		}
		add(fmt.Sprintf(`kube_node_info{job="kube-state-metrics",instance="10.244.0.9:8080",node="%s",internal_ip="%s",os_image="Windows Server 2025 Datacenter"}`, node, ip), "1x10")
		add(fmt.Sprintf(`kube_node_spec_unschedulable{job="kube-state-metrics",instance="10.244.0.9:8080",node="%s"}`, node), "0x10")
		for c := range benchContainers {
			pod := fmt.Sprintf("app-%02d-%02d", n, c/2)
			name := []string{"app", "sidecar"}[c%2]
			id := fmt.Sprintf("containerd://%064x", n*1000+c)
			exported := fmt.Sprintf(`container_id="%s",exported_namespace="ns-%d",exported_pod="%s",exported_container="%s"`, id, c/2%10, pod, name)
			iface := fmt.Sprintf(`interface="%08X-0000-0000-0000-%012X"`, n, c/2)
			add(`windows_container_available{`+target+`,`+exported+`,hostprocess="false"}`, "1x10")
			add(`windows_container_memory_usage_commit_bytes{`+target+`,`+exported+`}`, "102760448x10")
			add(`windows_container_memory_usage_private_working_set_bytes{`+target+`,`+exported+`}`, "44040192x10")
			add(`windows_container_cpu_usage_seconds_total{`+target+`,`+exported+`}`, "0+30x10")
			add(`windows_container_network_receive_bytes_total{`+target+`,`+exported+`,`+iface+`}`, "0+60000x10")
			add(`windows_container_network_transmit_bytes_total{`+target+`,`+exported+`,`+iface+`}`, "0+30000x10")
			ksm := fmt.Sprintf(`job="kube-state-metrics",instance="10.244.0.9:8080",namespace="ns-%d",pod="%s",container="%s",uid="%08x-0000-4000-8000-000000000000"`, c/2%10, pod, name, n*1000+c/2)
			add(`kube_pod_container_info{`+ksm+`,image="ghcr.io/example/app:1",container_id="`+id+`"}`, "1x10")
			add(`kube_pod_container_resource_limits{`+ksm+`,node="`+node+`",resource="memory",unit="byte"}`, "268435456x10")
			add(`kube_pod_container_resource_requests{`+ksm+`,node="`+node+`",resource="memory",unit="byte"}`, "268435456x10")
			add(`kube_pod_container_resource_limits{`+ksm+`,node="`+node+`",resource="cpu",unit="core"}`, "1x10")
			add(`kube_pod_container_resource_requests{`+ksm+`,node="`+node+`",resource="cpu",unit="core"}`, "0.5x10")
		}
	}
	return b.String(), series
}

// BenchmarkRuleEvaluation times one evaluation of every winobs rule group
// (records, then alerts) over the synthetic cluster and reports the series
// the records produce. `make bench` prints it.
func BenchmarkRuleEvaluation(b *testing.B) {
	script, inputs := syntheticCluster()
	suite, err := promqltest.NewLazyLoader(script, promqltest.LazyLoaderOpts{Parser: promqlParser})
	if err != nil {
		b.Fatal(err)
	}
	defer suite.Close()
	ts := time.Unix(0, 0).Add(10 * time.Minute)
	suite.WithSamplesTill(ts, func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	})
	files, _ := filepath.Glob(filepath.Join(manifests, "rules", "*.yaml"))
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
	groupMap, errs := mgr.LoadGroups(time.Minute, labels.EmptyLabels(), "", nil, false, files...)
	if errs != nil {
		b.Fatal(errs)
	}
	groups := orderGroups(groupMap, []string{"winobs-windows-records", "winobs-windows-alerts"})

	eval := func() {
		for _, g := range groups {
			g.Eval(suite.Context(), ts)
			for _, r := range g.Rules() {
				if err := r.LastError(); err != nil {
					b.Fatalf("%s: %v", r.Name(), err)
				}
			}
		}
	}
	eval() // warm up, and write the records counted below
	b.ResetTimer()
	for b.Loop() {
		eval()
	}
	b.StopTimer()

	q, err := engine.NewInstantQuery(suite.Context(), suite.Queryable(), nil, `count({__name__=~".+:winobs_.+:.+"})`, ts)
	if err != nil {
		b.Fatal(err)
	}
	res := q.Exec(suite.Context())
	if res.Err != nil {
		b.Fatal(res.Err)
	}
	produced := res.Value.(promql.Vector)[0].F
	// 9 records per container, 2 per pod, 6 per node.
	if want := float64(benchNodes*benchContainers*9 + benchNodes*benchContainers/2*2 + benchNodes*6); produced != want {
		b.Errorf("records produced %v series, want %v", produced, want)
	}
	b.ReportMetric(float64(inputs), "input_series")
	b.ReportMetric(produced, "record_series")
}
