// Package shipconfig is the eventlog-shipper's configuration: the one
// description of its file, its defaults (default.yaml) and its validation.
// gen builds this type to render the shipper's ConfigMap, and the shipper
// loads it, so neither links the other.
package shipconfig

import (
	_ "embed"
	"fmt"
	"net/netip"
	"os"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/prometheus/common/model"

	"github.com/winobs/winobs/conffile"
	"github.com/winobs/winobs/contract"
	"github.com/winobs/winobs/endpoint"
	"github.com/winobs/winobs/eventfilter"
)

//go:embed default.yaml
var defaultYAML []byte

// HealthFile is the file in StateDir where the shipper says it is alive and
// ready; gen points the pod's exec probes at it.
const HealthFile = "health.json"

// Config is the shipper's configuration file.
type Config struct {
	Loki Loki `yaml:"loki"`
	// Labels are static stream labels, taken literally (a '$' is a '$').
	// channel and computer are added per event.
	Labels map[string]string `yaml:"labels"`
	// LabelsFromEnv are stream labels whose value is read from an
	// environment variable (node: NODE_NAME); an unset or empty one is an
	// error. Only whole variables, so no value is ever interpolated.
	LabelsFromEnv map[string]string `yaml:"labelsFromEnv"`
	// StructuredMetadata: each entry carries its channel as structured
	// metadata, and a computer's channels of a class share a stream, as
	// Alloy's pipeline writes them; false makes the channel a stream label
	// and sends no metadata, for a Loki that refuses it
	// (limits_config.allow_structured_metadata false, schema before v13).
	StructuredMetadata bool      `yaml:"structuredMetadata"`
	Channels           []Channel `yaml:"channels"`
	Dumps              []Dump    `yaml:"dumps"`
	StateDir           string    `yaml:"stateDir"`
	// StartAt is where a channel without a checkpoint starts: newest takes a
	// bookmark at the newest record and saves it at once; oldest reads the
	// whole channel back to MaxAge.
	StartAt string            `yaml:"startAt"`
	MaxAge  conffile.Duration `yaml:"maxAge"`
	// OnCorruptCheckpoint: oldest (re-read, duplicates Loki drops), newest
	// (skip, losing what was not delivered) or fail (exit for an operator).
	OnCorruptCheckpoint string `yaml:"onCorruptCheckpoint"`
	// Timestamp of each entry: event (TimeCreated, so replays deduplicate)
	// or read (the time the shipper read it, as Alloy's default).
	Timestamp        string `yaml:"timestamp"`
	Locale           int    `yaml:"locale"`
	Batch            Batch  `yaml:"batch"`
	MaxInFlightBytes int    `yaml:"maxInFlightBytes"`
	MaxEventBytes    int    `yaml:"maxEventBytes"`
	Listen           string `yaml:"listen"`
	// Textfile, when set, is a .prom file the shipper's metrics are written
	// to for windows-exporter's textfile collector: Prometheus then gets them
	// through the exporter while the shipper listens on loopback only.
	Textfile      string            `yaml:"textfile"`
	ShutdownGrace conffile.Duration `yaml:"shutdownGrace"`
	// Limits keep every push inside what Loki accepts, so rejections are
	// prevented rather than repaired.
	Limits Limits `yaml:"limits"`
}

// Limits mirror Loki's defaults with a margin.
type Limits struct {
	// MaxLineBytes: Loki's max_line_size (256KB); a longer line is
	// truncated, ending in loki.TruncatedMarker.
	MaxLineBytes int `yaml:"maxLineBytes"`
	// MaxEntryAge: entries older than this (Loki rejects older than 7d) are
	// re-stamped to this age (TooOld restamp; timeCreated stays in the
	// line) or dropped as too_old (TooOld drop).
	MaxEntryAge conffile.Duration `yaml:"maxEntryAge"`
	TooOld      string            `yaml:"tooOld"`
	// MaxStreamLag: Loki rejects an entry older than its stream's newest
	// minus 1h; an older one is re-stamped to newest minus this.
	MaxStreamLag conffile.Duration `yaml:"maxStreamLag"`
	// MaxFuture: Loki refuses entries further ahead than its
	// creation_grace_period (10m); an entry further ahead than this (a wrong
	// clock) is re-stamped to its stream's newest time, so it neither is
	// refused nor drags the stream's later entries up. timeCreated stays in
	// the line.
	MaxFuture conffile.Duration `yaml:"maxFuture"`
	// StreamBytesPerSecond caps each stream below Loki's shard threshold
	// (shard_streams.desired_rate, 1536KB/s): a sharded stream stops
	// deduplicating replays. BytesPerSecond caps all streams below the
	// tenant's ingestion rate (4 MB/s). 0 means no cap.
	StreamBytesPerSecond int `yaml:"streamBytesPerSecond"`
	BytesPerSecond       int `yaml:"bytesPerSecond"`
	// MaxLanes bounds the lanes one stream (one computer's events of a
	// channel) is split over when it keeps its stream at
	// StreamBytesPerSecond (see Lanes).
	MaxLanes int `yaml:"maxLanes"`
}

// Lanes is the most lanes a stream is split over: MaxLanes, and one
// more than the node's cap fills at the stream cap (each push waits for its
// slowest stream, so with lanes that exactly fill the node's cap, the
// lanes' uneven shares, not the node's cap, would bind: 84% of it,
// measured); one without a stream cap (nothing to split for).
func (l Limits) Lanes() int {
	switch {
	case l.StreamBytesPerSecond <= 0:
		return 1
	case l.BytesPerSecond <= 0:
		return l.MaxLanes
	}
	return max(1, min(l.MaxLanes, (l.BytesPerSecond+l.StreamBytesPerSecond-1)/l.StreamBytesPerSecond+1))
}

// maxLanes bounds limits.maxLanes (contract.MaxLanes).
const maxLanes = contract.MaxLanes

// Values of Limits.TooOld.
const (
	Restamp = "restamp"
	Drop    = "drop"
)

// Loki is the push endpoint; secrets are files.
type Loki struct {
	// Endpoint is where to push, as gen's config describes it (same fields
	// and checks).
	Endpoint endpoint.Loki     `yaml:",inline"`
	Timeout  conffile.Duration `yaml:"timeout"`
	// MinBackoff and MaxBackoff bound the jittered exponential wait between
	// tries; retries never stop.
	MinBackoff conffile.Duration `yaml:"minBackoff"`
	MaxBackoff conffile.Duration `yaml:"maxBackoff"`
}

// Channel is a live subscription (Windows only).
type Channel struct {
	Name  string `yaml:"name"`
	Query string `yaml:"query"`
}

// Dump is a file written by wevtutil qe /f:RenderedXml.
type Dump struct {
	Path    string `yaml:"path"`
	Channel string `yaml:"channel"`
	// Query selects the dump's events as a subscription's query would
	// (an event query as gen renders it: eventfilter.Parse reads it); ""
	// takes every event.
	Query string `yaml:"query"`
	// Follow keeps reading as the file grows; otherwise the shipper exits
	// once every dump is delivered.
	Follow bool `yaml:"follow"`
}

// Batch bounds one push.
type Batch struct {
	MaxBytes int               `yaml:"maxBytes"`
	MaxWait  conffile.Duration `yaml:"maxWait"`
}

// Values of StartAt, OnCorruptCheckpoint and Timestamp.
const (
	Newest = "newest"
	Oldest = "oldest"
	Fail   = "fail"

	EventTime = "event"
	ReadTime  = "read"
)

// Overrides are command-line flags that take precedence over the file.
type Overrides struct {
	Listen   string
	StateDir string
}

// Load reads path over the defaults, applies the flag overrides,
// adds the labels read from the environment and validates everything,
// reporting all problems at once.
func Load(path string, flags ...Overrides) (*Config, error) {
	c, err := Default()
	if err != nil {
		return nil, err
	}
	src, err := conffile.ReadConfig(path, conffile.MaxFileSize)
	if err != nil {
		return nil, fmt.Errorf("reading config %s: %w", path, err)
	}
	doc, probs := conffile.Decode(path, src, c)
	for _, f := range flags {
		if f.Listen != "" {
			c.Listen = f.Listen
		}
		if f.StateDir != "" {
			c.StateDir = f.StateDir
		}
	}
	probs = append(probs, doc.Locate(c.validate())...)
	if len(probs) == 0 {
		for k, env := range c.LabelsFromEnv {
			if c.Labels == nil {
				c.Labels = map[string]string{}
			}
			c.Labels[k] = os.Getenv(env)
			if c.Labels[k] == "" {
				probs = append(probs, doc.Locate(conffile.Problems{{Path: conffile.KeyPath("labelsFromEnv", k),
					Msg: fmt.Sprintf("environment variable %s is unset or empty", env)}})...)
			}
		}
	}
	if len(probs) > 0 {
		return nil, probs.Sorted()
	}
	return c, nil
}

// Default is the embedded default configuration (not valid alone: it names
// no Loki URL and no source).
func Default() (*Config, error) {
	var c Config
	if doc, probs := conffile.Decode("(default)", defaultYAML, &c); len(probs) > 0 || doc == nil {
		return nil, fmt.Errorf("embedded default: %v", probs)
	}
	return &c, nil
}

// Validate checks c with the same rules Load applies, for a config built in
// code (gen's); every problem names its field.
func (c *Config) Validate() conffile.Problems { return c.validate() }

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (c *Config) validate() conffile.Problems {
	var probs conffile.Problems
	check := func(path string, ok bool, format string, args ...any) {
		if !ok {
			probs = append(probs, conffile.Problem{Path: path, Msg: fmt.Sprintf(format, args...)})
		}
	}
	duration := func(path string, d conffile.Duration, positive bool) {
		v, err := model.ParseDuration(string(d))
		check(path, err == nil && (!positive || v > 0), "must be a duration such as 1s or 5m, got %q", string(d))
	}
	probs = append(probs, c.Loki.Endpoint.Check("loki")...)
	duration("loki.timeout", c.Loki.Timeout, true)
	duration("loki.minBackoff", c.Loki.MinBackoff, true)
	duration("loki.maxBackoff", c.Loki.MaxBackoff, true)
	check("loki.maxBackoff", c.Loki.MaxBackoff.Model() >= c.Loki.MinBackoff.Model(), "must not be below loki.minBackoff")
	perEvent := strings.Join(contract.EventLabelsPerEvent, " and ")
	for k, v := range c.Labels {
		check(conffile.KeyPath("labels", k), endpoint.IsLabelName(k) && !slices.Contains(contract.EventLabelsPerEvent, k),
			"must be a label name other than %s (set per event)", perEvent)
		check(conffile.KeyPath("labels", k), v != "" && utf8.ValidString(v), "must be a non-empty UTF-8 value")
	}
	for k, env := range c.LabelsFromEnv {
		check(conffile.KeyPath("labelsFromEnv", k), endpoint.IsLabelName(k) && !slices.Contains(contract.EventLabelsPerEvent, k) && c.Labels[k] == "",
			"must be a label name other than %s, and not also in labels", perEvent)
		check(conffile.KeyPath("labelsFromEnv", k), envName.MatchString(env), "must name an environment variable, got %q", env)
	}
	static := contract.LokiMaxLabelNames - len(contract.EventLabelsPerEvent)
	check("labels", len(c.Labels)+len(c.LabelsFromEnv) <= static,
		"at most %d static labels: Loki allows %d per stream, %s are added", static, contract.LokiMaxLabelNames, perEvent)
	check("channels", len(c.Channels)+len(c.Dumps) > 0, "configure at least one channel or dump")
	seen := map[string]bool{}
	for i, ch := range c.Channels {
		// Windows channel names ignore case, and so do NTFS checkpoint files.
		check(fmt.Sprintf("channels[%d].name", i), ch.Name != "" && !seen[strings.ToLower(ch.Name)], "must be a channel name, each once (ignoring case)")
		seen[strings.ToLower(ch.Name)] = true
	}
	for i, d := range c.Dumps {
		check(fmt.Sprintf("dumps[%d].path", i), d.Path != "", "must not be empty")
		check(fmt.Sprintf("dumps[%d].channel", i), d.Channel != "" && !seen[strings.ToLower(d.Channel)], "must name the dump's channel, each once (ignoring case)")
		seen[strings.ToLower(d.Channel)] = true
		if d.Query != "" {
			_, err := eventfilter.Parse(d.Query)
			check(fmt.Sprintf("dumps[%d].query", i), err == nil, "must be an event query the shipper can evaluate (an XPath or <QueryList> as gen renders them): %v", err)
		}
	}
	check("stateDir", c.StateDir != "", "must not be empty")
	check("startAt", c.StartAt == Newest || c.StartAt == Oldest, "must be newest or oldest, got %q", c.StartAt)
	duration("maxAge", c.MaxAge, false)
	check("onCorruptCheckpoint", c.OnCorruptCheckpoint == Oldest || c.OnCorruptCheckpoint == Newest || c.OnCorruptCheckpoint == Fail,
		"must be oldest, newest or fail, got %q", c.OnCorruptCheckpoint)
	check("timestamp", c.Timestamp == EventTime || c.Timestamp == ReadTime, "must be event or read, got %q", c.Timestamp)
	check("locale", c.Locale > 0 && c.Locale <= 0xFFFF, "must be a Windows LCID such as 1033")
	check("batch.maxBytes", c.Batch.MaxBytes >= 64<<10 && c.Batch.MaxBytes <= 16<<20, "must be between 64 KiB and 16 MiB, got %d", c.Batch.MaxBytes)
	duration("batch.maxWait", c.Batch.MaxWait, true)
	check("maxInFlightBytes", c.MaxInFlightBytes >= 2*c.Batch.MaxBytes, "must hold at least two batches (%d), got %d", 2*c.Batch.MaxBytes, c.MaxInFlightBytes)
	check("maxEventBytes", c.MaxEventBytes >= 64<<10 && c.MaxEventBytes <= c.Batch.MaxBytes,
		"must be between 64 KiB and batch.maxBytes, got %d", c.MaxEventBytes)
	ap, err := netip.ParseAddrPort(c.Listen)
	check("listen", err == nil && ap.Addr().IsLoopback() && ap.Addr().Zone() == "",
		"must be a loopback address:port such as 127.0.0.1:9498, without a zone (the node's network is shared with every HostProcess pod), got %q", c.Listen)
	check("textfile", c.Textfile == "" || strings.HasSuffix(c.Textfile, ".prom"), "must end in .prom (the textfile collector reads only those), got %q", c.Textfile)
	duration("shutdownGrace", c.ShutdownGrace, true)
	l := c.Limits
	check("limits.maxLineBytes", l.MaxLineBytes >= 1024 && l.MaxLineBytes <= c.MaxEventBytes*4, "must be between 1024 and 4 x maxEventBytes, got %d", l.MaxLineBytes)
	duration("limits.maxEntryAge", l.MaxEntryAge, true)
	check("limits.tooOld", l.TooOld == Restamp || l.TooOld == Drop, "must be restamp or drop, got %q", l.TooOld)
	duration("limits.maxStreamLag", l.MaxStreamLag, true)
	duration("limits.maxFuture", l.MaxFuture, true)
	check("limits.streamBytesPerSecond", l.StreamBytesPerSecond >= 0, "must be 0 (no cap) or a rate in bytes per second")
	check("limits.bytesPerSecond", l.BytesPerSecond >= 0, "must be 0 (no cap) or a rate in bytes per second")
	check("limits.maxLanes", l.MaxLanes >= 1 && l.MaxLanes <= maxLanes, "must be between 1 (never split a channel) and %d, got %d", maxLanes, l.MaxLanes)
	return probs
}
