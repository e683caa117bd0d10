package rules

import (
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"

	"github.com/winobs/winobs/contract"
	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/gen/view"
	"github.com/winobs/winobs/gen/vocab"
)

// Thresholds of the detections: BruteForceLogons failed logons of one
// account on one node in 10 minutes, held for 2 minutes; HostServiceErrors
// errors of the HNS or HCS on one node in 10 minutes.
const (
	BruteForceLogons  = 20
	BruteForceHold    = 2 * time.Minute
	HostServiceErrors = 3
)

// PrivilegedGroupSIDs are the well-known SIDs of the groups whose
// membership changes are alerted on: Builtin Administrators (544), Account,
// Server and Backup Operators (548, 549, 551), Hyper-V Administrators
// (578), and a domain's Domain, Schema and Enterprise Admins (RIDs 512,
// 518, 519). SIDs, not names: group names are translated.
const PrivilegedGroupSIDs = `S-1-5-32-(544|548|549|551|578)|S-1-5-21-[0-9-]+-(512|518|519)`

// detectionRules are the Loki alerts of the event sets v forwards.
func detectionRules(v view.Rules, ts *templates) []rulefmt.Rule {
	t := v.Terms
	channel := func(name string) string { return t.Channels(nil, name) }
	var out []rulefmt.Rule
	if slices.Contains(v.EventSets, config.SetSecurity) {
		security := channel(config.ChannelSecurity)
		out = append(out,
			rulefmt.Rule{
				Alert: contract.AlertLogonBruteForce,
				Expr: ts.fill(contract.AlertLogonBruteForce,
					`sum by ($[cluster], $[nodeLabel], target_user) (count_over_time($[sec] | json event_id="event_id", event_data="event_data" | event_id="$[id]" | $[user] [10m])) >= $[n]`,
					vocab.Args{"nodeLabel": contract.LabelNode, "sec": security, "user": vocab.EventField("event_data", "TargetUserName", "target_user"), "n": strconv.Itoa(BruteForceLogons), "id": vocab.SecurityFailedLogon}),
				For:    model.Duration(BruteForceHold),
				Labels: map[string]string{"severity": "warning"},
				Annotations: map[string]string{
					"summary":     "Failed logons for {{ $labels.target_user }} on Windows node {{ $labels.node }}.",
					"description": "{{ $value }} failed logons (Security event 4625) for account {{ $labels.target_user }} on {{ $labels.node }} in 10 minutes: password guessing, or a service with a stale password.",
				},
			},
			rulefmt.Rule{
				Alert: contract.AlertAccountLockedOut,
				Expr: ts.fill(contract.AlertAccountLockedOut,
					`sum by ($[cluster], $[nodeLabel], target_user) (count_over_time($[sec] | json event_id="event_id", event_data="event_data" | event_id="$[id]" | $[user] [10m])) > 0`,
					vocab.Args{"nodeLabel": contract.LabelNode, "sec": security, "user": vocab.EventField("event_data", "TargetUserName", "target_user"), "id": vocab.SecurityLockout}),
				Labels: map[string]string{"severity": "warning"},
				Annotations: map[string]string{
					"summary":     "Account {{ $labels.target_user }} locked out on Windows node {{ $labels.node }}.",
					"description": "Security event 4740: account {{ $labels.target_user }} was locked out on {{ $labels.node }} after too many failed logons.",
				},
			},
			rulefmt.Rule{
				Alert: contract.AlertAuditLogCleared,
				Expr: ts.fill(contract.AlertAuditLogCleared,
					`sum by ($[cluster], $[nodeLabel], subject_user) (count_over_time($[sec] | json event_id="event_id", user_data="user_data" | event_id="$[id]" | $[user] [10m])) > 0`,
					vocab.Args{"nodeLabel": contract.LabelNode, "sec": security, "user": vocab.EventField("user_data", "SubjectUserName", "subject_user"), "id": vocab.SecurityLogCleared}),
				Labels: map[string]string{"severity": "critical"},
				Annotations: map[string]string{
					"summary":     "The Security log was cleared on Windows node {{ $labels.node }}.",
					"description": "Event 1102: {{ $labels.subject_user }} cleared the audit log on {{ $labels.node }}. Attackers clear it to hide what they did; what was shipped before is still in Loki.",
				},
			},
			rulefmt.Rule{
				// The SCM's 7045 in System, or Security's 4697 where the
				// audit policy logs it (it names who installed the
				// service): one install, one alert, grouped by service.
				Alert: contract.AlertServiceInstalled,
				Expr: ts.fill(contract.AlertServiceInstalled,
					`sum by ($[cluster], $[nodeLabel], service) (count_over_time($[both] | json | (event_id="$[scm]" and source="$[scmSource]") or event_id="$[audit]" | $[service] [10m])) > 0`,
					vocab.Args{"nodeLabel": contract.LabelNode, "both": t.Channels(nil, config.ChannelSystem, config.ChannelSecurity),
						"scmSource": vocab.SCMProvider, "service": vocab.EventField("event_data", "ServiceName", "service"),
						"scm": vocab.SCMServiceInstalled, "audit": vocab.SecurityServiceInstalled}),
				Labels: map[string]string{"severity": "warning"},
				Annotations: map[string]string{
					"summary":     "Service {{ $labels.service }} was installed on Windows node {{ $labels.node }}.",
					"description": "A new service, {{ $labels.service }}, was installed on {{ $labels.node }} (the Service Control Manager's event 7045, or Security's 4697). Expected while a node is provisioned or upgraded; otherwise a common way to persist on a host.",
				},
			},
			rulefmt.Rule{
				Alert: contract.AlertAccountCreated,
				Expr: ts.fill(contract.AlertAccountCreated,
					`sum by ($[cluster], $[nodeLabel], target_user, subject_user) (count_over_time($[sec] | json event_id="event_id", event_data="event_data" | event_id="$[id]" | $[users] [10m])) > 0`,
					vocab.Args{"nodeLabel": contract.LabelNode, "sec": security, "id": vocab.SecurityAccountCreated,
						// TargetUserName (the new account) comes before SubjectUserName (who made it).
						"users": `line_format "{{.event_data}}" | regexp "<Data Name='TargetUserName'>(?P<target_user>[^<]*)</Data>.*<Data Name='SubjectUserName'>(?P<subject_user>[^<]*)</Data>"`}),
				Labels: map[string]string{"severity": "warning"},
				Annotations: map[string]string{
					"summary":     "Account {{ $labels.target_user }} was created on Windows node {{ $labels.node }}.",
					"description": "Security event 4720: {{ $labels.subject_user }} created the local account {{ $labels.target_user }} on {{ $labels.node }}. Kubernetes nodes are built from images and rarely get accounts by hand: a common way to keep access to a host.",
				},
			},
			rulefmt.Rule{
				Alert: contract.AlertPrivilegedGroupChanged,
				Expr: ts.fill(contract.AlertPrivilegedGroupChanged,
					`sum by ($[cluster], $[nodeLabel], group, event_id) (count_over_time($[sec] | json event_id="event_id", event_data="event_data" | event_id=~"$[ids]" | $[group] | group_sid=~"$[sids]" [10m])) > 0`,
					vocab.Args{"nodeLabel": contract.LabelNode, "sec": security, "sids": PrivilegedGroupSIDs, "ids": vocab.SecurityGroupMember,
						// TargetUserName (the group's name) comes before its TargetSid.
						"group": `line_format "{{.event_data}}" | regexp "<Data Name='TargetUserName'>(?P<group>[^<]*)</Data>.*<Data Name='TargetSid'>(?P<group_sid>[^<]*)</Data>"`}),
				Labels: map[string]string{"severity": "critical"},
				Annotations: map[string]string{
					"summary":     "Membership of {{ $labels.group }} changed on Windows node {{ $labels.node }}.",
					"description": "Security event {{ $labels.event_id }} on {{ $labels.node }}: a member was added to or removed from the privileged group {{ $labels.group }}.",
				},
			},
		)
	}
	if slices.Contains(v.EventSets, config.SetNodeOperations) {
		for _, hs := range []struct{ alert, channel, what string }{
			{contract.AlertHostNetworkErrors, config.ChannelHNS, "Host Network Service (pod endpoints, networks, load balancers)"},
			{contract.AlertHostComputeErrors, config.ChannelHCS, "Host Compute Service (container create and start)"},
		} {
			out = append(out, rulefmt.Rule{
				Alert: hs.alert,
				Expr: ts.fill(hs.alert,
					`sum by ($[cluster], $[nodeLabel]) (count_over_time($[ch] | json level="level" | level=~"1|2" [10m])) >= $[n]`,
					vocab.Args{"nodeLabel": contract.LabelNode, "ch": channel(hs.channel), "n": strconv.Itoa(HostServiceErrors)}),
				Labels: map[string]string{"severity": "warning"},
				Annotations: map[string]string{
					"summary":     "The " + hs.what + " fails on Windows node {{ $labels.node }}.",
					"description": "{{ $value }} critical or error events in " + hs.channel + " on {{ $labels.node }} in 10 minutes: pods on the node may fail to start or lose their network.",
				},
			})
		}
	}
	return out
}
