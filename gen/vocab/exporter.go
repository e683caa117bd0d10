package vocab

import (
	"strconv"
	"strings"

	"github.com/winobs/winobs/contract"
)

// SupportedExporterVersions matches the version label of the exporter
// versions the rules are tested against (contract's range; 0.32 renames
// windows_memory_commit_limit, so it is outside until tested).
var SupportedExporterVersions = func() string {
	var minors []string
	for m := contract.OldestExporterMinor; m <= contract.NewestExporterMinor; m++ {
		minors = append(minors, strconv.Itoa(m))
	}
	return `v?0\.(` + strings.Join(minors, "|") + `)\..*`
}()

// bootTimeNames are the boot time's names in windows_exporter 0.31 (and
// 0.30.6+), 0.30 and 0.29: whichever the node's exporter has.
var bootTimeNames = []string{Metrics.BootTime031, Metrics.BootTime030, Metrics.SystemUpTime029}

// BootTime is the node's boot time, as a Unix timestamp, under whichever
// name its exporter version uses, aggregated by the given labels.
func BootTime(by string, sel Selector) string {
	parts := make([]string, len(bootTimeNames))
	for i, n := range bootTimeNames {
		parts[i] = sel.Of(n)
	}
	return "max by (" + by + ") (\n  " + strings.Join(parts, "\n  or ") + "\n)"
}
