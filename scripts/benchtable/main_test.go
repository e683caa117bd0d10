package main

import (
	"strings"
	"testing"
)

// Real go test -bench output, as make bench prints it, becomes the table:
// every figure in its row, a benchmark that did not run said so, and
// output that holds no result refused.
func TestTable(t *testing.T) {
	out := `goos: linux
goarch: amd64
pkg: github.com/winobs/winobs/tests
cpu: Oxide Virtual Turin-like Processor             
BenchmarkRecordsVsKubePrometheusStack/nodes=50-2         	      20	 580112405 ns/op	         0.3064 cpu_ratio	         6.000 kps_empty_records	       392.8 kps_ms	         0.3600 ratio	       141.4 winobs_ms
BenchmarkRecordsVsKubePrometheusStack/nodes=200-2        	       5	2618523012 ns/op	         6.000 kps_empty_records	      1531 kps_ms	         0.3837 ratio	       587.3 winobs_ms
BenchmarkRecordsVsKubePrometheusStack/nodes=50,linux=150-2         	      20	1213753528 ns/op	         0.2333 cpu_ratio	         6.000 kps_empty_records	       873.4 kps_ms	         0.2570 ratio	       224.5 winobs_ms
BenchmarkShipperBinary-2 	       5	 1186233561 ns/op	    112000 events/s	        21.50 peak_RSS_MiB	         9.800 windows_binary_MB
BenchmarkFleetStreams/sets=node-operations+security-2         	       1	  79916460 ns/op	      1000 nodes_at_stream_limit	         5.000 streams/node
BenchmarkShipperIntoLoki/loki-model/channels=1-2         	       1	20715191574 ns/op	       511.7 KiB/s/channel	       501.2 bytes/line	      1045 events/s/channel	      1045 events/s/node	         0 sharded_entries	         7.000 streams
PASS
`
	res, machine, err := parse(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	got := table(res, machine)
	for _, want := range []string{
		"Measured on: Oxide Virtual Turin-like Processor, GOMAXPROCS 2 (linux/amd64).",
		"| 0.36 (winobs 141 ms, kube-prometheus-stack 393 ms); CPU time 0.31 |",
		"| 0.38 (winobs 587 ms, kube-prometheus-stack 1531 ms) |",
		"150 Linux nodes (kube-state-metrics reports all 12,000 containers) | 0.26 (winobs 224 ms, kube-prometheus-stack 873 ms); CPU time 0.23 |",
		"| 112000 events/s |", "| 21.5 MiB |", "| 9.8 MB |",
		"| 1045 events/s (512 KiB/s of 501-byte lines), 0 entries sharded, 7 streams (lanes) |",
		"| 5 streams a node: 1000 nodes fill Loki's default 5,000 |",
		"one evaluation (50 × 60) | not run |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
	if _, _, err := parse(strings.NewReader("PASS\nok  \tx\t1s\n")); err == nil {
		t.Error("output without results accepted")
	}
}

// Three runs of a benchmark (go test -count 3, lines measured 2026-12-05)
// give each figure's median and the ratios' range.
func TestTableOverRuns(t *testing.T) {
	out := `cpu: Oxide Virtual Turin-like Processor
BenchmarkRecordsVsKubePrometheusStack/nodes=50-2         	      20	 609170277 ns/op	         0.2895 cpu_ratio	         6.000 kps_empty_records	       377.1 kps_ms	         0.3249 ratio	       122.5 winobs_ms
BenchmarkRecordsVsKubePrometheusStack/nodes=50-2         	      20	 592226149 ns/op	         0.3045 cpu_ratio	         6.000 kps_empty_records	       363.8 kps_ms	         0.3402 ratio	       123.8 winobs_ms
BenchmarkRecordsVsKubePrometheusStack/nodes=50-2         	      20	 594546992 ns/op	         0.3039 cpu_ratio	         6.000 kps_empty_records	       361.5 kps_ms	         0.3512 ratio	       126.9 winobs_ms
`
	res, machine, err := parse(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	want := "| 0.34 (0.32–0.35 over 3 runs; winobs 124 ms, kube-prometheus-stack 364 ms); CPU time 0.30 (0.29–0.30) |"
	if got := table(res, machine); !strings.Contains(got, want) {
		t.Errorf("table lacks %q:\n%s", want, got)
	}
}

// The fleet table holds one row a size, from the records benchmark (lines
// measured 2026-12-06 at 1,000 nodes), the default sets' streams and
// doctor's fleet run; a size not run says so.
func TestFleetTable(t *testing.T) {
	out := `cpu: Intel(R) Xeon(R) Processor
BenchmarkRecordsVsKubePrometheusStack/nodes=1000-2         	       5	18007117114 ns/op	         0.2521 cpu_ratio	    800000 input_series	      2918 kps_alloc_MiB	         6.000 kps_empty_records	     11593 kps_ms	      6590 peak_RSS_MiB	         0.3044 ratio	      1248 winobs_alloc_MiB	      3529 winobs_ms
BenchmarkFleetStreams/sets=node-operations+security-2         	       1	  79916460 ns/op	      1000 nodes_at_stream_limit	         5.000 streams/node
BenchmarkDoctorAtFleetSize-2         	       1	31000000000 ns/op	         0 checks_not_passed	      1000 largest_loki_items	      1000 largest_prometheus_series	      1000 nodes
`
	res, machine, err := parse(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	got := table(res, machine)
	for _, want := range []string{
		"| 50 | not run | not run | not run | not run | 250 (5 % of the 5000) | not measured |",
		"| 1000 | 800000 | 0.25 | 1248 MiB (2918 MiB) | 6.4 GiB | 5000 (100 % of the 5000) | 1000 series, 1000 values; 0 checks not passed |",
		"| 0 checks not passed; largest answers 1000 series (Prometheus), 1000 values (Loki) |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
}
