// Command benchtable turns the output of `make bench` (go test -bench lines)
// into one table, each figure beside its anchor (the baseline it is
// compared with, or the target it is held to) and the machine it ran on.
// `make bench` prints it and writes docs/performance.md with it.
//
//	go test -bench . ... | tee bench.txt; go run ./scripts/benchtable < bench.txt
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/winobs/winobs/contract"
)

func main() {
	res, machine, err := parse(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
	fmt.Print(table(res, machine))
}

// result is one benchmark's metrics by unit.
type result map[string]float64

// benchLine is a result line: name (its -GOMAXPROCS suffix dropped),
// iterations, then value-unit pairs.
var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-(\d+))?\s+(\d+)\s+(.+)$`)

// parse reads go test -bench output: the results by benchmark name, and the
// machine the header lines describe (cpu, goos/goarch). A benchmark run
// several times (-count) gives the median of each figure, with the lowest
// and highest of each as <unit>_min and <unit>_max and the count as runs:
// a figure that moves between processes (where the heap happens to lie)
// shows how far.
func parse(r io.Reader) (map[string]result, string, error) {
	runs := map[string][]result{}
	var cpu, goos, goarch string
	procs := 1
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if v, ok := strings.CutPrefix(line, "cpu: "); ok {
			cpu = strings.TrimSpace(v)
		} else if v, ok := strings.CutPrefix(line, "goos: "); ok {
			goos = v
		} else if v, ok := strings.CutPrefix(line, "goarch: "); ok {
			goarch = v
		}
		m := benchLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if n, err := strconv.Atoi(m[2]); err == nil {
			procs = max(procs, n)
		}
		fields := strings.Fields(m[4])
		if len(fields)%2 != 0 {
			return nil, "", fmt.Errorf("%q: odd value-unit pairs", line)
		}
		r := result{}
		for i := 0; i < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				return nil, "", fmt.Errorf("%q: %w", line, err)
			}
			r[fields[i+1]] = v
		}
		runs[m[1]] = append(runs[m[1]], r)
	}
	if err := sc.Err(); err != nil {
		return nil, "", err
	}
	if len(runs) == 0 {
		return nil, "", fmt.Errorf("no benchmark results in the input")
	}
	res := map[string]result{}
	for name, rs := range runs {
		res[name] = combine(rs)
	}
	return res, fmt.Sprintf("%s, GOMAXPROCS %d (%s/%s)", cpu, procs, goos, goarch), nil
}

// combine is one result for several runs of a benchmark: each unit's
// median (the lower middle of an even count), lowest and highest.
func combine(rs []result) result {
	if len(rs) == 1 {
		return rs[0]
	}
	out := result{"runs": float64(len(rs))}
	for unit := range rs[0] {
		var vs []float64
		for _, r := range rs {
			if v, ok := r[unit]; ok {
				vs = append(vs, v)
			}
		}
		slices.Sort(vs)
		out[unit], out[unit+"_min"], out[unit+"_max"] = vs[(len(vs)-1)/2], vs[0], vs[len(vs)-1]
	}
	return out
}

// row is one figure of the table: where it comes from and what it is held
// against.
type row struct {
	what, bench string
	value       func(result) string
	anchor      string
}

func ms(unit string) func(result) string {
	return func(r result) string { return fmt.Sprintf("%.0f ms", r[unit]) }
}

// ratio shows a ratio with the two times it divides; over several runs each
// figure is its median, the ratios with their range.
func ratio(r result) string {
	v := fmt.Sprintf("%.2f (winobs %.0f ms, kube-prometheus-stack %.0f ms)", r["ratio"], r["winobs_ms"], r["kps_ms"])
	if n := r["runs"]; n > 1 {
		v = fmt.Sprintf("%.2f (%.2f–%.2f over %.0f runs; winobs %.0f ms, kube-prometheus-stack %.0f ms)",
			r["ratio"], r["ratio_min"], r["ratio_max"], n, r["winobs_ms"], r["kps_ms"])
	}
	if c, ok := r["cpu_ratio"]; ok {
		v += fmt.Sprintf("; CPU time %.2f", c)
		if r["runs"] > 1 {
			v += fmt.Sprintf(" (%.2f–%.2f)", r["cpu_ratio_min"], r["cpu_ratio_max"])
		}
	}
	return v
}

// doctorAnswers shows doctor's largest answers at fleet size and the
// checks that did not pass.
func doctorAnswers(r result) string {
	return fmt.Sprintf("%.0f checks not passed; largest answers %.0f series (Prometheus), %.0f values (Loki)",
		r["checks_not_passed"], r["largest_prometheus_series"], r["largest_loki_items"])
}

// perChannel and perNode show a shipper rate with its bytes and what Loki
// would have sharded.
func perChannel(r result) string {
	return fmt.Sprintf("%.0f events/s (%.0f KiB/s of %.0f-byte lines)%s", r["events/s/channel"], r["KiB/s/channel"], r["bytes/line"], shards(r))
}

func perNode(r result) string {
	return fmt.Sprintf("%.0f events/s%s", r["events/s/node"], shards(r))
}

func shards(r result) string {
	out := ""
	if n, ok := r["sharded_entries"]; ok {
		out += fmt.Sprintf(", %.0f entries sharded", n)
	}
	if n, ok := r["streams"]; ok {
		out += fmt.Sprintf(", %.0f streams (lanes)", n)
	}
	return out
}

// streams shows a node's event streams and the fleet they fill a tenant with.
func streams(r result) string {
	return fmt.Sprintf("%.0f streams a node: %.0f nodes fill Loki's default 5,000", r["streams/node"], r["nodes_at_stream_limit"])
}

func unit(u, format string) func(result) string {
	return func(r result) string { return fmt.Sprintf(format, r[u]) }
}

var rows = []row{
	{"Recording rules vs kube-prometheus-stack's Windows records, 50 nodes × 60 containers (median evaluation)",
		"BenchmarkRecordsVsKubePrometheusStack/nodes=50", ratio, "≤ 0.35 (issue 34); both on the same TSDB, alternating"},
	{"… at 200 nodes × 60 containers", "BenchmarkRecordsVsKubePrometheusStack/nodes=200", ratio, "≤ 0.35, flat with size"},
	{"… at 1,000 nodes × 60 containers (the fleet; run alone under GOMEMLIMIT)", "BenchmarkRecordsVsKubePrometheusStack/nodes=1000", ratio,
		"≤ 0.25 of kube-prometheus-stack's CPU time, median of 3 processes, 0 empty records (issue 61); series and memory in the fleet table"},
	{"… 50 Windows nodes in a cluster with 150 Linux nodes (kube-state-metrics reports all 12,000 containers)",
		"BenchmarkRecordsVsKubePrometheusStack/nodes=50,linux=150", ratio, "a hybrid cluster: every join with kube-state-metrics reads the Linux containers too"},
	{"Every winobs rule group, one evaluation (50 × 60)", "BenchmarkRuleEvaluation",
		func(r result) string { return fmt.Sprintf("%.0f ms", r["ns/op"]/1e6) }, "a ruler's interval: 30 s"},
	{"Dashboards vs kube-prometheus-stack's Windows dashboards, opened as Grafana opens them (engine time)",
		"BenchmarkDashboardsVsKubePrometheusStack", ratio, "< 1: cheaper than what they replace"},
	{"eventlog-shipper, real binary on one core, loopback receiver", "BenchmarkShipperBinary", unit("events/s", "%.0f events/s"),
		"what one node may send: limits.bytesPerSecond 3 MiB/s, about 4,500 events/s of a System/Security mix (issue 34)"},
	{"… its peak RSS", "BenchmarkShipperBinary", unit("peak_RSS_MiB", "%.1f MiB"), "the DaemonSet's memory limit: 128 MiB (shipper.resources)"},
	{"… its Windows binary", "BenchmarkShipperBinary", unit("windows_binary_MB", "%.1f MB"), "the image's only file of ours"},
	{"eventlog-shipper with its default rate caps, one channel into the Loki model (default limits, shard rule)",
		"BenchmarkShipperIntoLoki/loki-model/channels=1", perChannel,
		"Loki 3.7.6, 300,000 real events: 775 events/s (issue 34; one stream, before lanes); target ≥ 3,500 events/s, no entry sharded"},
	{"… a node's two channels", "BenchmarkShipperIntoLoki/loki-model/channels=2", perNode, "limits.bytesPerSecond: 3 MiB/s a node"},
	{"… one channel into VictoriaLogs", "BenchmarkShipperIntoLoki/victorialogs/channels=1", perChannel, ""},
	{"Event streams a node (real binary, real Loki, 3 nodes), default channels (System, Application), no set", "BenchmarkFleetStreams/sets=none", streams,
		"max_global_streams_per_user 5,000 a tenant, pod log streams (one or two a container) included; goal: 2,000 nodes with every default set (issue 61; before it, the channel a stream label: 2 to 5 streams a node)"},
	{"… with the node-operations set", "BenchmarkFleetStreams/sets=node-operations", streams, ""},
	{"… with the security set", "BenchmarkFleetStreams/sets=security", streams, ""},
	{"… with both sets (the default)", "BenchmarkFleetStreams/sets=node-operations+security", streams, "2,000 nodes' default sets in one tenant on a real Loki: TestFleetOfNodesIntoRealLoki (make test)"},
	{"Format, batch and encode, per event", "BenchmarkFormatBatchEncode", unit("ns/op", "%.0f ns/op"), "the shipper's CPU per event"},
	{"… allocations", "BenchmarkFormatBatchEncode", unit("allocs/op", "%.0f allocs/op"), ""},
	{"Event XML → Alloy line", "BenchmarkParseLine", unit("ns/op", "%.0f ns/op"), ""},
	{"A dump's Security events through the security set's query, per event (parse, test, format what is kept)", "BenchmarkDumpQuery/prepare", unit("ns/op", "%.0f ns/op"),
		"a busy node's Security mix: 4624/4634 30% each, 4672 15%, 5156 20%, 4688 4%, the rest 1% (BenchmarkDumpQuery)"},
	{"… the share of that mix forwarded", "BenchmarkDumpQuery/prepare", unit("forwarded_%", "%.1f %%"), "issue 45: the floods left out"},
	{"… the query's test alone, per event", "BenchmarkDumpQuery/match", unit("ns/op", "%.0f ns/op"), ""},
	{"doctor against 1,000 Windows nodes (Prometheus' engine, a real Loki with its default limits, four channels a node in two streams)", "BenchmarkDoctorAtFleetSize", doctorAnswers,
		"Loki's max_query_series 500 and Prometheus' --query.max-samples 50 M refuse no query (issue 61)"},
	{"`go run ./cmd/gen` first build: CPU-seconds with an empty build cache", "BenchmarkGenBuild", unit("cold_build_cpu_s", "%.0f CPU-s"),
		"issue 29: 163 CPU-s before (modules downloaded here, not there)"},
	{"… with the build cache warm", "BenchmarkGenBuild", unit("warm_build_cpu_s", "%.1f CPU-s"), ""},
	{"… one render of the default bundle", "BenchmarkGenBuild", ms("render_ms"), ""},
}

// fleetSizes are the fleet table's rows: the records benchmark's sizes.
var fleetSizes = []int{50, 200, 1000}

// defaultStreams is the benchmark of the default event sets' streams.
const defaultStreams = "BenchmarkFleetStreams/sets=node-operations+security"

// fleetTable is one row a fleet size: the records' input series, CPU ratio
// and memory, the default event sets' streams against Loki's default limit,
// and doctor's largest answer where it was measured at that size.
func fleetTable(res map[string]result) string {
	var b strings.Builder
	b.WriteString("\n## The fleet\n\nOne row a fleet size: the recording rules against kube-prometheus-stack's on the same synthetic cluster (60\n")
	b.WriteString("containers a node), the event streams the default sets cost a Loki tenant (max_global_streams_per_user 5,000),\n")
	b.WriteString("and doctor's largest answer.\n\n")
	b.WriteString("| nodes | input series | records' CPU time vs kube-prometheus-stack's | one evaluation allocates (kube-prometheus-stack) | peak RSS | event streams, default sets | doctor's largest answer |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	streams, hasStreams := res[defaultStreams]
	doctor, hasDoctor := res["BenchmarkDoctorAtFleetSize"]
	for _, n := range fleetSizes {
		cells := []string{strconv.Itoa(n), "not run", "not run", "not run", "not run", "not run", "not measured"}
		if r, ok := res[fmt.Sprintf("BenchmarkRecordsVsKubePrometheusStack/nodes=%d", n)]; ok {
			cells[1] = fmt.Sprintf("%.0f", r["input_series"])
			cells[2] = fmt.Sprintf("%.2f", r["cpu_ratio"])
			if r["runs"] > 1 {
				cells[2] += fmt.Sprintf(" (%.2f–%.2f over %.0f runs)", r["cpu_ratio_min"], r["cpu_ratio_max"], r["runs"])
			}
			cells[3] = fmt.Sprintf("%.0f MiB (%.0f MiB)", r["winobs_alloc_MiB"], r["kps_alloc_MiB"])
			cells[4] = fmt.Sprintf("%.1f GiB", r["peak_RSS_MiB"]/1024)
		}
		if hasStreams {
			total := streams["streams/node"] * float64(n)
			cells[5] = fmt.Sprintf("%.0f (%.0f %% of the %d)", total, 100*total/contract.LokiMaxGlobalStreams, contract.LokiMaxGlobalStreams)
		}
		if hasDoctor && doctor["nodes"] == float64(n) {
			cells[6] = fmt.Sprintf("%.0f series, %.0f values; %.0f checks not passed", doctor["largest_prometheus_series"], doctor["largest_loki_items"], doctor["checks_not_passed"])
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	return b.String()
}

// table renders the figures present in res, in rows' order; a benchmark
// that did not run is said, not left out silently. The fleet table follows.
func table(res map[string]result, machine string) string {
	var b strings.Builder
	b.WriteString("# Performance\n\n`make bench` writes this file. Benchmarks, never timed tests: no test's verdict depends on the\n")
	b.WriteString("machine's speed. Times are medians (ratios: both sides in one process, alternating) or means of each benchmark's runs;\n")
	b.WriteString("a figure measured in several processes is their median, with the range.\n\n")
	fmt.Fprintf(&b, "Measured on: %s.\n\n| figure | value | anchor |\n|---|---|---|\n", machine)
	for _, r := range rows {
		v := "not run"
		if got, ok := res[r.bench]; ok {
			v = r.value(got)
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", r.what, v, r.anchor)
	}
	b.WriteString(fleetTable(res))
	return b.String()
}
