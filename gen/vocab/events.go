package vocab

import (
	"encoding/hex"
	"strings"
	"unicode/utf16"
)

// Service Control Manager event ids, for the Loki rules and the event log
// dashboard.
const (
	SCMStartFailed    = "7000" // the service failed to start
	SCMStartTimeout   = "7009" // timed out waiting for the service to connect
	SCMTerminated     = "7031" // terminated unexpectedly, recovery action follows
	SCMTerminatedOnce = "7034" // terminated unexpectedly, no recovery action
	SCMStateChange    = "7036" // entered the running or stopped state
)

// SCMStream selects the Service Control Manager's events of the System
// channel in the streams ms narrow, as Alloy's line names their source.
func (t Terms) SCMStream(ms ...Matcher) string {
	return t.Channels(ms, "System") + ` | json | source="` + SCMProvider + `"`
}

// SCMProvider is the Service Control Manager's provider name, the line's
// source.
const SCMProvider = "Service Control Manager"

// BinaryServiceKey is how a service key name appears in an SCM event's
// <Binary> payload: UTF-16LE, upper-case hex. Matching it, unlike the
// display name in param1, does not depend on the node's language.
func BinaryServiceKey(name string) string {
	units := utf16.Encode([]rune(name))
	b := make([]byte, 0, 2*len(units))
	for _, u := range units {
		b = append(b, byte(u), byte(u>>8))
	}
	return strings.ToUpper(hex.EncodeToString(b))
}

// AppCrashSources and AppCrashEventIDs are the application crash signals of
// a Windows container's own event log (Application channel): Application
// Error 1000 (a process crashed), Application Hang 1002 (stopped
// responding) and .NET Runtime 1026 (an unhandled exception).
const (
	AppCrashSources  = `Application Error|Application Hang|\.NET Runtime`
	AppCrashEventIDs = "1000|1002|1026"
)

// LogMonitor's source types of event log and ETW lines.
const (
	LogMonitorEventLog = "EventLog"
	LogMonitorETW      = "ETW"
)

// EventField is a LogQL stage that sets label to the value of an event's
// EventData field (data "event_data") or UserData element (data
// "user_data"), read from Alloy's event line after | json: its
// event_data and user_data hold the fields as XML.
func EventField(data, field, label string) string {
	open, close := "<Data Name='"+field+"'>", "</Data>"
	if data == "user_data" {
		open, close = "<"+field+">", "</"+field+">"
	}
	return `line_format "{{.` + data + `}}" | regexp "` + open + `(?P<` + label + `>[^<]*)` + close + `"`
}

// Security event ids the detections and the Events dashboard read.
const (
	SecurityFailedLogon = "4625"
	SecurityLockout     = "4740"
	SecurityLogCleared  = "1102"
	SCMServiceInstalled = "7045"
	// SecurityServiceInstalled: a service installed, as Security audits it
	// (Audit Security System Extension), with who installed it.
	SecurityServiceInstalled = "4697"
	// SecurityAccountCreated: a local user account created.
	SecurityAccountCreated = "4720"
	// SecurityGroupMember: a member added to or removed from a global,
	// local or universal security group.
	SecurityGroupMember = "4728|4729|4732|4733|4756|4757"
)
