package shipconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "shipper.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const minimal = "loki: {url: https://loki.example.com/loki/api/v1/push}\nchannels: [{name: System}]\n"

// A minimal file over the defaults loads, flags take precedence over the
// file, and labels from the environment are read once.
func TestLoadMinimal(t *testing.T) {
	t.Setenv("NODE_NAME", "win-1")
	p := write(t, minimal+"labelsFromEnv: {node: NODE_NAME}\nlisten: 127.0.0.1:1\n")
	c, err := Load(p, Overrides{Listen: "127.0.0.1:9500"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:9500" || c.Labels["node"] != "win-1" || c.Labels["job"] != "windows-events" || c.Batch.MaxBytes != 256<<10 {
		t.Errorf("%+v", c)
	}
}

// Every problem of a file at once, each at its file:line: path, through the
// same toolkit as gen's config: flow style, strict booleans, keys with path
// punctuation, unset environment variables, a value that failed to decode
// not reported twice.
func TestLoadReportsEveryProblemAtItsNode(t *testing.T) {
	t.Setenv("EMPTY_VAR", "")
	p := write(t, `loki:
  url: http://loki.example.com/loki/api/v1/push
  bearerTokenFile: C:\token
channels: [{name: System}, {name: system}]
dumps: [{path: C:\d.xml, channel: Setup, follow: "yes"}]
labels: {"a.b": x}
labelsFromEnv: {node: EMPTY_VAR, bad: "1X"}
batch: {maxBytes: lots}
listen: "[::1%lo]:9498"
startAt: Newest
limits: {maxLanes: 0}
`)
	_, err := Load(p)
	if err == nil {
		t.Fatal("loaded")
	}
	got := err.Error()
	for _, want := range []string{
		p + ":2: loki.url: is plain http, so basicAuth or the bearer token would be sent in the clear",
		p + ":4: channels[1].name: must be a channel name, each once",
		p + `:5: dumps[0].follow: must be true or false, not the text "yes"`,
		p + `:6: labels["a.b"]: must be a label name`,
		p + `:7: labelsFromEnv.bad: must name an environment variable, got "1X"`,
		p + `:8: batch.maxBytes: must be a whole number, not the text "lots"`,
		p + ":9: listen: must be a loopback address:port",
		p + `:10: startAt: must be newest or oldest, got "Newest"`,
		p + `:11: limits.maxLanes: must be between 1 (never split a channel) and 32, got 0`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	// maxBytes failed to decode: no second problem about the batches it
	// would hold; the unset variable is reported only once the rest holds.
	for _, not := range []string{"maxInFlightBytes", "maxEventBytes", "EMPTY_VAR"} {
		if strings.Contains(got, not) {
			t.Errorf("%s reported:\n%s", not, got)
		}
	}
	if n := strings.Count(got, "\n  "); n != 9 {
		t.Errorf("%d problems, want 9:\n%s", n, got)
	}
}

func TestLoadUnsetEnvironment(t *testing.T) {
	t.Setenv("EMPTY_VAR", "")
	_, err := Load(write(t, minimal+"labelsFromEnv: {node: EMPTY_VAR}\n"))
	if err == nil || !strings.Contains(err.Error(), ":3: labelsFromEnv.node: environment variable EMPTY_VAR is unset or empty") {
		t.Errorf("%v", err)
	}
}

// The embedded default decodes cleanly and, alone, asks for a URL and a
// source rather than inventing them.
func TestDefaultNeedsURLAndSource(t *testing.T) {
	c, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	got := c.Validate()
	var paths []string
	for _, p := range got {
		paths = append(paths, p.Path)
	}
	if strings.Join(paths, ",") != "loki.url,channels" {
		t.Errorf("problems of the default alone: %v", got)
	}
}

// A missing file, a directory and a second document are refused with the
// file named.
func TestLoadRefusesUnreadable(t *testing.T) {
	dir := t.TempDir()
	for name, path := range map[string]string{
		"missing":         filepath.Join(dir, "nope.yaml"),
		"directory":       dir,
		"second document": write(t, minimal+"---\nlisten: x\n"),
	} {
		if _, err := Load(path); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// A channel's lanes follow the caps: one more than the node's cap fills at
// the stream cap, bounded by maxLanes; maxLanes alone without a node cap;
// one without a stream cap.
func TestLanes(t *testing.T) {
	for _, tc := range []struct {
		stream, node, maxLanes, want int
	}{
		{512 << 10, 3 << 20, 8, 7}, // the defaults
		{512 << 10, 3 << 20, 4, 4},
		{1 << 20, 3 << 20, 8, 4},
		{512 << 10, 0, 8, 8}, // bytesPerSecond: 0, a Loki with raised limits
		{512 << 10, 0, 32, 32},
		{0, 3 << 20, 8, 1},         // no stream cap: nothing to split for
		{4 << 20, 3 << 20, 8, 2},   // a stream cap above the node's
		{512 << 10, 3 << 20, 1, 1}, // maxLanes: 1 never splits
	} {
		l := Limits{StreamBytesPerSecond: tc.stream, BytesPerSecond: tc.node, MaxLanes: tc.maxLanes}
		if got := l.Lanes(); got != tc.want {
			t.Errorf("%+v: %d lanes, want %d", l, got, tc.want)
		}
	}
}
