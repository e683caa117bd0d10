package contract

// The Loki alerts' names, which leave gen in the rendered rules and are
// matched by what users write (Alertmanager routes and silences), named by
// docs/runbooks.md's sections and by config's warning for a detection left
// without input: spelled once, here, for the rules that define them and
// the config that names them.
const (
	AlertNodeServiceTerminated  = "WindowsNodeServiceTerminated"
	AlertServiceStartFailed     = "WindowsServiceStartFailed"
	AlertContainerAppCrashed    = "WindowsContainerApplicationCrashed"
	AlertLogonBruteForce        = "WindowsLogonBruteForce"
	AlertAccountLockedOut       = "WindowsAccountLockedOut"
	AlertAuditLogCleared        = "WindowsAuditLogCleared"
	AlertServiceInstalled       = "WindowsServiceInstalled"
	AlertAccountCreated         = "WindowsAccountCreated"
	AlertPrivilegedGroupChanged = "WindowsPrivilegedGroupChanged"
	AlertHostNetworkErrors      = "WindowsHostNetworkServiceErrors"
	AlertHostComputeErrors      = "WindowsHostComputeServiceErrors"
)

// LokiAlerts are the Loki alerts' names, for the check that no other file
// spells them.
var LokiAlerts = []string{AlertNodeServiceTerminated, AlertServiceStartFailed, AlertContainerAppCrashed,
	AlertLogonBruteForce, AlertAccountLockedOut, AlertAuditLogCleared, AlertServiceInstalled, AlertAccountCreated,
	AlertPrivilegedGroupChanged, AlertHostNetworkErrors, AlertHostComputeErrors}
