package shipper_test

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/winobs/winobs/internal/testkit/fixture"
	"github.com/winobs/winobs/internal/testkit/lokiproc"
	"github.com/winobs/winobs/shipper/eventxml"
)

// Issue 58: the detections select channel="Security" (and "System", the
// HNS and HCS channels), and LogQL matchers are case-sensitive. The shipper
// names a stream by the event's own <Channel>, as Alloy does
// (loki.source.windowsevent's target.go sets "channel" from event.Channel),
// so a config spelling the channel "security" and a collector's
// ForwardedEvents (which holds other channels' events) fire the same
// detections as a node whose channels are spelled as Windows spells them.
// The judge is the rendered Loki rules (manifests/loki-rules, kept fresh by
// make check-generated), each run as an instant query on a real Loki.
// (Was: channel="security" and channel="ForwardedEvents", 0 rules
// selected them.)
func TestChannelLabelIsTheEventsOwnRealLoki(t *testing.T) {
	loki := lokiproc.Start(t, lokiproc.Options{})
	bin := buildShipper(t)
	byChannel := fixtureEventsByChannel(t)
	var all [][]byte
	for _, events := range byChannel {
		all = append(all, events...)
	}
	security := byChannel["Security"]
	push := loki.URL + "/loki/api/v1/push"
	var native []channelDump
	for channel, events := range byChannel {
		native = append(native, channelDump{channel: channel, events: events})
	}
	shipOnce(t, bin, push, "", "windows-events", "control", native) // each channel spelled as Windows spells it
	shipOnce(t, bin, push, "", "windows-events", "control-security", []channelDump{{channel: "Security", events: security}})
	shipOnce(t, bin, push, "", "windows-events", "spelled", []channelDump{{channel: "security", events: security}}) // the config's spelling
	shipOnce(t, bin, push, "", "windows-events", "collector", []channelDump{{channel: "ForwardedEvents", events: all}})
	lokiLines(t, loki, `{job="windows-events", node="collector"}`) // wait for the last run to be readable

	fired := map[string][]string{}
	for _, r := range renderedLokiAlerts(t) {
		for _, node := range lokiNodes(t, loki, r.Expr) {
			if !slices.Contains(fired[node], r.Alert) {
				fired[node] = append(fired[node], r.Alert)
			}
		}
	}
	control := fired["control"]
	for _, a := range []string{"WindowsAccountLockedOut", "WindowsAuditLogCleared", "WindowsPrivilegedGroupChanged", "WindowsServiceInstalled"} {
		if !slices.Contains(control, a) {
			t.Fatalf("the control node fires %v, not %s: the fixtures no longer exercise the detections", control, a)
		}
	}
	if !slices.Equal(fired["collector"], control) {
		t.Errorf("ForwardedEvents fires %v, want %v as on the node itself", fired["collector"], control)
	}
	controlSecurity := fired["control-security"]
	if len(controlSecurity) < 3 || !slices.Equal(fired["spelled"], controlSecurity) {
		t.Errorf(`a channel spelled "security" fires %v, want %v`, fired["spelled"], controlSecurity)
	}
}

// fixtureEventsByChannel are the Event XML fixtures (testdata/events) by
// their own channel.
func fixtureEventsByChannel(t *testing.T) map[string][][]byte {
	t.Helper()
	byChannel := map[string][][]byte{}
	for _, f := range fixture.Glob(t, 12, fixture.Events, "*.xml") {
		x := fixture.Read(t, fixture.Events, filepath.Base(f))
		e, err := eventxml.Parse(x)
		if err != nil {
			t.Fatal(err)
		}
		byChannel[e.Channel()] = append(byChannel[e.Channel()], x)
	}
	return byChannel
}

// renderedLokiAlerts are the committed render's Loki alerts.
func renderedLokiAlerts(t *testing.T) []struct{ Alert, Expr string } {
	t.Helper()
	var file struct {
		Groups []struct {
			Rules []struct{ Alert, Expr string }
		}
	}
	if err := yaml.Unmarshal([]byte(mustRead(t, "../manifests/loki-rules/winobs-windows-events.yaml")), &file); err != nil || len(file.Groups) == 0 {
		t.Fatalf("the rendered Loki rules: %v", err)
	}
	return file.Groups[0].Rules
}

// lokiNodes are the node labels of an instant LogQL metric query's series,
// now.
func lokiNodes(t *testing.T, l *lokiproc.Loki, query string) []string {
	t.Helper()
	var nodes []string
	samples, _ := l.Instant(t, "", query, time.Time{})
	for _, s := range samples {
		nodes = append(nodes, s.Metric["node"])
	}
	return nodes
}
