package contract

import "fmt"

// The windows_exporter minor versions (0.x) the rules, dashboards and doctor
// are tested against: each renamed metrics, and the views read every name.
const (
	OldestExporterMinor = 29
	NewestExporterMinor = 31
)

// ExporterRange names the tested versions for people: "0.29 to 0.31".
var ExporterRange = fmt.Sprintf("0.%d to 0.%d", OldestExporterMinor, NewestExporterMinor)
