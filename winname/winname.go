// Package winname holds Windows' rules for a file name, so that a name
// winobs builds from a config value (a channel's checkpoint, a bookmark, a
// directory of a Windows path) never opens a device or a file other than the
// one meant. The rules are Microsoft's "Naming Files, Paths, and Namespaces":
// the reserved device names, alone or before an extension, in any case, and
// no name ending in a dot or a space (Win32 strips them, so "a." opens "a").
// Windows 11 narrowed the device rule; Windows Server 2022, winobs's node,
// did not, so the old rule is the one kept. It imports nothing: gen's
// config checks and the shipper's checkpoint store share it.
package winname

import "strings"

// devices are the reserved names, upper case. COM and LPT take a digit,
// 0 included, or the superscripts ¹ ² ³ (which Windows counts as digits).
var devices = map[string]bool{"CON": true, "PRN": true, "AUX": true, "NUL": true, "CONIN$": true, "CONOUT$": true}

func init() {
	for _, d := range []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "¹", "²", "³"} {
		devices["COM"+d], devices["LPT"+d] = true, true
	}
}

// Device reports whether Windows opens a device for the file name: a
// reserved name in any case, alone or followed by an extension ("NUL.txt",
// "lpt9.log.checkpoint") or by spaces before the extension ("CON .x").
func Device(name string) bool {
	base, _, _ := strings.Cut(name, ".")
	base = strings.TrimRight(base, " ")
	return devices[strings.ToUpper(base)]
}

// Problem is why Windows would treat name otherwise than as the file it
// says, or "" for a plain name.
func Problem(name string) string {
	switch {
	case Device(name):
		b, _, _ := strings.Cut(name, ".")
		return "names the Windows device " + strings.ToUpper(strings.TrimRight(b, " ")) + " (in any case, with or without an extension)"
	case strings.HasSuffix(name, ".") || strings.HasSuffix(name, " "):
		return "ends in a dot or a space, which Windows strips from a file name"
	}
	return ""
}
