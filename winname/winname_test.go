package winname_test

import (
	"testing"

	"github.com/winobs/winobs/winname"
)

// The table is Microsoft's "Naming Files, Paths, and Namespaces" (reserved
// names, "NUL.txt and NUL.tar.gz are both equivalent to NUL", no trailing
// dot or space), and Go's own rule for Windows (internal/filepathlite:
// CONIN$, CONOUT$, spaces before the extension), written out here rather
// than derived from the code under test.
func TestWindowsNames(t *testing.T) {
	for _, tc := range []struct {
		name   string
		device bool
		plain  bool
	}{
		{"NUL", true, false}, {"nul", true, false}, {"Nul.checkpoint", true, false}, {"NUL.tar.gz", true, false},
		{"CON", true, false}, {"con", true, false}, {"AUX", true, false}, {"PRN.sent", true, false},
		{"COM1", true, false}, {"com9.lanes", true, false}, {"COM0", true, false}, {"COM¹", true, false}, {"lpt³.x", true, false},
		{"LPT9.log", true, false}, {"LPT1", true, false}, {"CONIN$", true, false}, {"conout$.txt", true, false},
		{"CON .txt", true, false}, {"NUL  ", true, false},
		{"trailing.", false, false}, {"trailing ", false, false},
		{"System", false, true}, {"Security.checkpoint", false, true}, {"NULL", false, true}, {"COM10", false, true},
		{"LPT", false, true}, {"CONSOLE", false, true}, {"xNUL", false, true}, {"a.NUL", false, true},
		{"Microsoft-Windows-Sysmon_Operational-0123abcd.checkpoint", false, true}, {"NUL-0123abcd.checkpoint", false, true},
	} {
		if got := winname.Device(tc.name); got != tc.device {
			t.Errorf("Device(%q) = %v, want %v", tc.name, got, tc.device)
		}
		if got := winname.Problem(tc.name); (got == "") != tc.plain {
			t.Errorf("Problem(%q) = %q, want plain %v", tc.name, got, tc.plain)
		}
	}
}
