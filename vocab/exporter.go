package vocab

import (
	"fmt"
	"strconv"
	"strings"
)

// The windows_exporter minor versions (0.x) whose metric names the rules
// are tested against, oldest first. 0.32 renames
// windows_memory_commit_limit, so it is outside until tested.
const (
	oldestSupportedMinor = 29
	newestSupportedMinor = 31
)

// SupportedExporterVersions matches the supported versions' version label.
var SupportedExporterVersions = func() string {
	var minors []string
	for m := oldestSupportedMinor; m <= newestSupportedMinor; m++ {
		minors = append(minors, strconv.Itoa(m))
	}
	return `v?0\.(` + strings.Join(minors, "|") + `)\..*`
}()

// SupportedExporterRange names the supported versions for people: "0.29 to 0.31".
var SupportedExporterRange = fmt.Sprintf("0.%d to 0.%d", oldestSupportedMinor, newestSupportedMinor)

// bootTimeNames are the boot time's names in windows_exporter 0.31 (and
// 0.30.6+), 0.30 and 0.29: whichever the node's exporter has.
var bootTimeNames = []string{
	"windows_system_boot_time_timestamp",
	"windows_system_boot_time_timestamp_seconds",
	"windows_system_system_up_time",
}

// BootTime is the node's boot time, as a Unix timestamp, under whichever
// name its exporter version uses, aggregated by the given labels.
func BootTime(by string, sel Selector) string {
	parts := make([]string, len(bootTimeNames))
	for i, n := range bootTimeNames {
		parts[i] = sel.Of(n)
	}
	return "max by (" + by + ") (\n  " + strings.Join(parts, "\n  or ") + "\n)"
}
