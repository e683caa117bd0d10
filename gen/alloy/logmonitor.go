package alloy

import (
	"encoding/json"
	"slices"

	"github.com/winobs/winobs/gen/config"
)

// LogMonitorConfigPath is where gen writes the LogMonitor config to start a
// Windows container image from.
const LogMonitorConfigPath = "logmonitor/LogMonitorConfig.json"

// logMonitorLevels are LogMonitor's channel levels by Windows event level:
// a channel's level takes that level and every more severe one.
var logMonitorLevels = map[int]string{1: "Critical", 2: "Error", 3: "Warning", 4: "Information", 5: "Verbose"}

// LogMonitorConfig is a LogMonitorConfig.json for a Windows container image
// whose logs the pod pipeline parses: JSON lines (the only format it
// parses), the configured event log channels at their least severe
// configured level (LogMonitor takes a level and everything more severe),
// and startAtOldestRecord false, since LogMonitor keeps no bookmark and true
// replays the whole channel, with old times, on every container start.
func LogMonitorConfig(channels []config.Channel) ([]byte, error) {
	type channel struct {
		Name  string `json:"name"`
		Level string `json:"level"`
	}
	type source struct {
		Type                 string    `json:"type"`
		StartAtOldestRecord  bool      `json:"startAtOldestRecord"`
		EventFormatMultiLine bool      `json:"eventFormatMultiLine"`
		Channels             []channel `json:"channels"`
	}
	events := source{Type: "EventLog"}
	for _, ch := range channels {
		// LogMonitor subscribes to levels 1 and up only: a channel of
		// level-0 events alone (Security's audits) is one it cannot read.
		// A channel chosen by ids or providers alone is not a level LogMonitor
		// can select.
		if len(ch.Levels) == 0 {
			continue
		}
		if level, ok := logMonitorLevels[slices.Max(ch.Levels)]; ok {
			events.Channels = append(events.Channels, channel{Name: ch.Name, Level: level})
		}
	}
	doc := map[string]any{"LogConfig": map[string]any{"logFormat": "json", "sources": []source{events}}}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
