package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/winobs/winobs/contract"
	"github.com/winobs/winobs/eventfilter"
)

// Names of the event sets (eventLog.sets).
const (
	SetNodeOperations = "node-operations"
	SetSecurity       = "security"
)

// Channels of the node-operation events; the detections read them.
const (
	ChannelSecurity = contract.ChannelSecurity
	ChannelSystem   = "System"
	// ChannelApplication is where applications' own events go (Application
	// Error 1000); the default config forwards its errors.
	ChannelApplication = "Application"
	// ChannelHNS is the Host Network Service's admin channel: pod
	// endpoints, networks and load balancers.
	ChannelHNS = "Microsoft-Windows-Host-Network-Service-Admin"
	// ChannelHCS is the Host Compute Service's admin channel: container
	// create and start failures.
	ChannelHCS = "Microsoft-Windows-Hyper-V-Compute-Admin"
)

// KnownChannels are channels as Windows spells them: a config naming one in
// another case gets Windows' spelling (CanonicalChannel), since stream
// labels, the detections' selectors and the dashboards' matchers are
// case-sensitive and Windows' channel names are not.
var KnownChannels = []string{ChannelApplication, ChannelSecurity, "Setup", ChannelSystem, "ForwardedEvents", ChannelHNS, ChannelHCS}

// CanonicalChannel is name as Windows spells it when it is one of
// KnownChannels in another case, else name.
func CanonicalChannel(name string) string {
	for _, k := range KnownChannels {
		if strings.EqualFold(k, name) {
			return k
		}
	}
	return name
}

// spellingWarnings names each channel written otherwise than Windows
// spells it: gen renders Windows' spelling.
func spellingWarnings(e EventLog) Problems {
	var out Problems
	for i, ch := range e.Channels {
		if c := CanonicalChannel(ch.Name); c != ch.Name {
			out = append(out, Problem{Path: fmt.Sprintf("eventLog.channels[%d].name", i), Msg: fmt.Sprintf(
				"%q is Windows' channel %q: rendered as %q, the spelling the stream label, the detections and the dashboards select (LogQL matchers are case-sensitive); write it so",
				ch.Name, c, c)})
		}
	}
	return out
}

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
// and filters added to eventLog.channels (a channel in both gets the union
// of the filters, less every exclusion any of them writes).
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

// EventReader is a Loki alert of package rules and the events it reads on
// one channel (an alert reading two channels has an entry for each):
// an exclusion a user writes on its channel leaves it without input.
// rules' tests hold this table to the alerts' queries.
type EventReader struct {
	Alert, Channel string
	// Set is the event set the alert is rendered with; "" for an alert
	// always rendered.
	Set string
	// IDs are the event ids it reads; none: any id of the channel.
	IDs []int
	// Levels are the levels it reads; none: any level.
	Levels []int
}

// EventReaders are the Loki alerts that read event log channels, and
// their inputs.
var EventReaders = []EventReader{
	{Alert: contract.AlertNodeServiceTerminated, Channel: ChannelSystem, IDs: []int{7031, 7034}},
	{Alert: contract.AlertServiceStartFailed, Channel: ChannelSystem, IDs: []int{7000, 7009}},
	{Alert: contract.AlertLogonBruteForce, Set: SetSecurity, Channel: ChannelSecurity, IDs: []int{4625}},
	{Alert: contract.AlertAccountLockedOut, Set: SetSecurity, Channel: ChannelSecurity, IDs: []int{4740}},
	{Alert: contract.AlertAuditLogCleared, Set: SetSecurity, Channel: ChannelSecurity, IDs: []int{1102}},
	{Alert: contract.AlertPrivilegedGroupChanged, Set: SetSecurity, Channel: ChannelSecurity, IDs: []int{4728, 4729, 4732, 4733, 4756, 4757}},
	{Alert: contract.AlertServiceInstalled, Set: SetSecurity, Channel: ChannelSystem, IDs: []int{7045}},
	{Alert: contract.AlertServiceInstalled, Set: SetSecurity, Channel: ChannelSecurity, IDs: []int{4697}},
	{Alert: contract.AlertAccountCreated, Set: SetSecurity, Channel: ChannelSecurity, IDs: []int{4720}},
	{Alert: contract.AlertHostNetworkErrors, Set: SetNodeOperations, Channel: ChannelHNS, Levels: []int{1, 2}},
	{Alert: contract.AlertHostComputeErrors, Set: SetNodeOperations, Channel: ChannelHCS, Levels: []int{1, 2}},
}

// setWarnings names the detection that loses all its input to exclusions
// the user writes: an exclusion is the channel's, and removes the id from
// the sets' filters too. A detection with another input left (another id,
// another channel) still fires and is not named.
func setWarnings(e EventLog) Problems {
	excluded := map[string]map[int]bool{}
	for _, ch := range e.Channels {
		for _, ev := range ch.Events {
			if id, ok := eventfilter.Exclusion(ev); ok {
				key := strings.ToLower(ch.Name)
				if excluded[key] == nil {
					excluded[key] = map[int]bool{}
				}
				excluded[key][id] = true
			}
		}
	}
	readers := map[string][]EventReader{}
	var order []string
	for _, r := range EventReaders {
		if r.Set != "" && !slices.Contains(e.Sets, r.Set) {
			continue
		}
		if _, ok := readers[r.Alert]; !ok {
			order = append(order, r.Alert)
		}
		readers[r.Alert] = append(readers[r.Alert], r)
	}
	blind := func(alert string) bool {
		for _, r := range readers[alert] {
			if len(r.IDs) == 0 || slices.ContainsFunc(r.IDs, func(id int) bool { return !excluded[strings.ToLower(r.Channel)][id] }) {
				return false
			}
		}
		return true
	}
	var out Problems
	for i, ch := range e.Channels {
		for j, ev := range ch.Events {
			id, ok := eventfilter.Exclusion(ev)
			if !ok {
				continue
			}
			for _, alert := range order {
				reads := slices.ContainsFunc(readers[alert], func(r EventReader) bool {
					return strings.EqualFold(r.Channel, ch.Name) && slices.Contains(r.IDs, id)
				})
				if reads && blind(alert) {
					out = append(out, Problem{Path: fmt.Sprintf("eventLog.channels[%d].events[%d]", i, j), Msg: fmt.Sprintf(
						"excludes %s event %d, which the alert %s reads: it will never fire on this cluster; drop the exclusion to keep it",
						ch.Name, id, alert)})
				}
			}
		}
	}
	return out
}

// sources calls fn with each channel filter the config forwards and where
// it comes from: the user's eventLog.channels, then each set's, in order.
func (e EventLog) sources(fn func(from string, ch Channel)) {
	for _, ch := range e.Channels {
		fn("eventLog.channels", ch)
	}
	for _, set := range e.Sets {
		for _, ch := range EventSets[set] {
			fn("set "+set, ch)
		}
	}
}

// Describe says, one line a channel, what its subscription forwards: each
// filter with where it comes from (the user's eventLog.channels or a set),
// and the exclusions that apply to all of them. gen prints it, so that a
// set widening a channel the user narrowed is never silent.
func (e EventLog) Describe() []string {
	type source struct {
		name     string
		from     []string
		excluded []string
	}
	var order []*source
	byKey := map[string]*source{}
	add := func(name, from string, f eventfilter.Filter) {
		key := strings.ToLower(name)
		s, ok := byKey[key]
		if !ok {
			s = &source{name: CanonicalChannel(name)}
			byKey[key] = s
			order = append(order, s)
		}
		if took := from + " (" + takes(f) + ")"; !slices.Contains(s.from, took) {
			s.from = append(s.from, took)
		}
		for _, ev := range f.Events {
			if id, ok := eventfilter.Exclusion(ev); ok && !slices.Contains(s.excluded, strconv.Itoa(id)) {
				s.excluded = append(s.excluded, strconv.Itoa(id))
			}
		}
	}
	e.sources(func(from string, ch Channel) { add(ch.Name, from, ch.Filter) })
	var lines []string
	for _, s := range order {
		line := s.name + ": " + strings.Join(s.from, " + ")
		if len(s.excluded) > 0 {
			line += ", less events " + strings.Join(s.excluded, ", ") + " (from every filter)"
		}
		lines = append(lines, line)
	}
	return lines
}

// takes is a filter in a few words: "levels 1,2,3", "events 7045 of
// Service Control Manager".
func takes(f eventfilter.Filter) string {
	var parts []string
	if len(f.Levels) > 0 {
		ls := make([]string, len(f.Levels))
		for i, l := range f.Levels {
			ls[i] = strconv.Itoa(l)
		}
		parts = append(parts, "levels "+strings.Join(ls, ","))
	}
	var ids []string
	for _, ev := range f.Events {
		if _, excluded := eventfilter.Exclusion(ev); !excluded {
			ids = append(ids, strings.TrimSpace(ev))
		}
	}
	if len(ids) > 0 {
		parts = append(parts, "events "+strings.Join(ids, ","))
	}
	if len(f.Providers) > 0 {
		parts = append(parts, "of "+strings.Join(f.Providers, ", "))
	}
	if len(f.Keywords) > 0 {
		parts = append(parts, "keywords "+strings.Join(f.Keywords, ","))
	}
	if len(parts) == 0 {
		return "every event"
	}
	return strings.Join(parts, " ")
}
