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
BenchmarkShipperBinary-2 	       5	 1186233561 ns/op	    112000 events/s	        21.50 peak_RSS_MiB	         9.800 windows_binary_MB
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
		"| 112000 events/s |", "| 21.5 MiB |", "| 9.8 MB |",
		"| 1045 events/s (512 KiB/s of 501-byte lines), 0 entries sharded, 7 streams (lanes) |",
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
