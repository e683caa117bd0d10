package config

import "github.com/winobs/winobs/eventfilter"

// Names of the event sets (eventLog.sets).
const (
	SetNodeOperations = "node-operations"
	SetSecurity       = "security"
)

// Channels of the node-operation events; the detections read them.
const (
	ChannelSecurity = "Security"
	ChannelSystem   = "System"
	// ChannelHNS is the Host Network Service's admin channel: pod
	// endpoints, networks and load balancers.
	ChannelHNS = "Microsoft-Windows-Host-Network-Service-Admin"
	// ChannelHCS is the Host Compute Service's admin channel: container
	// create and start failures.
	ChannelHCS = "Microsoft-Windows-Hyper-V-Compute-Admin"
)

// SecurityEvents are the Security audit events the security set forwards
// (docs/events.md): the audit log cleared (1102), a failed logon (4625), a
// service or scheduled task installed (4697, 4698), accounts created,
// enabled, changed in password, disabled and deleted (4720, 4722-4726),
// members added to or removed from security groups (4728/4729 global,
// 4732/4733 local, 4756/4757 universal) and an account locked out (4740).
// Left out, the floods of a busy node: logons and logoffs (4624, 4634,
// 4647), process creation (4688), filtering-platform connections
// (5156/5158), and the every-logon 4672.
var SecurityEvents = []string{"1102", "4625", "4697", "4698", "4720", "4722-4726", "4728", "4729", "4732", "4733", "4740", "4756", "4757"}

// EventSets are the event sets users pick by name, each a list of channels
// and filters added to eventLog.channels (a channel in both gets the union).
// Their events keep the usual stream labels: what the detections need
// (event id, account, address) is in the line, parsed by LogQL.
var EventSets = map[string][]Channel{
	// Node operations: what breaks Windows pods. System's errors and
	// warnings (the Service Control Manager's failures 7000/7009/7031/7034,
	// kernel, disk and NTFS errors), and the errors and warnings of the
	// Host Network Service and the Host Compute Service.
	SetNodeOperations: {
		{Name: ChannelSystem, Filter: eventfilter.Filter{Levels: []int{1, 2, 3}}},
		{Name: ChannelHNS, Filter: eventfilter.Filter{Levels: []int{1, 2, 3}}},
		{Name: ChannelHCS, Filter: eventfilter.Filter{Levels: []int{1, 2, 3}}},
	},
	// Security: SecurityEvents at any level (audit events are level 0,
	// 1102 is 4), and the SCM's "a service was installed" (7045).
	SetSecurity: {
		{Name: ChannelSecurity, Filter: eventfilter.Filter{Events: SecurityEvents}},
		{Name: ChannelSystem, Filter: eventfilter.Filter{Providers: []string{"Service Control Manager"}, Events: []string{"7045"}}},
	},
}
