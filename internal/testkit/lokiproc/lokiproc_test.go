package lokiproc

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/winobs/winobs/internal/testkit/fixture"
)

// Issue 58: readiness took any 200 on the port, which after freePorts
// closed its listener could be another test's Loki. The Loki that answers
// is proven to be the one started, by its data directory in /config.
func TestOnlyOurLokiIsTaken(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/config" {
			w.Write([]byte("common:\n  path_prefix: /tmp/another-test/001\n"))
		}
	}))
	defer other.Close()
	if !ready(other.URL) {
		t.Fatal("a 200 on /ready is not ready")
	}
	if ours(other.URL, "/tmp/this-test/001") {
		t.Error("another Loki's answer was taken for ours")
	}
	if !ours(other.URL, "/tmp/another-test/001") {
		t.Error("a Loki on its own directory was not recognised")
	}
	if ours(other.URL, "/tmp/another-test/00") {
		t.Error("a directory's prefix was taken for it")
	}
}

// Issue 67: a Loki configured as an upgraded install is (schema v12 on
// boltdb-shipper active, structured metadata disallowed) starts, stores a
// push without metadata, and refuses one with it in the words recorded in
// testdata/loki; its /config leaves allow_structured_metadata out (false,
// omitempty), where a default Loki's says true.
func TestUpgradedLokiRefusesMetadata(t *testing.T) {
	now := strconv.FormatInt(time.Now().UnixNano(), 10)
	withMeta := `{"streams":[{"stream":{"job":"windows-events","class":"node"},"values":[["` + now + `","line",{"channel":"System"}]]}]}`
	plain := `{"streams":[{"stream":{"job":"windows-events","class":"node","channel":"System"},"values":[["` + now + `","line"]]}]}`
	for _, upgraded := range []bool{true, false} {
		l := Start(t, Options{Upgraded: upgraded})
		code, body := l.Push(t, "", "application/json", []byte(withMeta))
		want := string(fixture.Read(t, "loki", "400-disallowed-structured-metadata.txt"))
		if upgraded && (code != http.StatusBadRequest || body != want) || !upgraded && code != http.StatusNoContent {
			t.Errorf("upgraded %v: metadata pushed: %d %q", upgraded, code, body)
		}
		if code, body := l.Push(t, "", "application/json", []byte(plain)); code != http.StatusNoContent {
			t.Errorf("upgraded %v: no metadata: %d %q", upgraded, code, body)
		}
		_, cfg := l.get(t, "", "/config", nil)
		if got := strings.Contains(string(cfg), "\n  allow_structured_metadata: true\n"); got == upgraded {
			t.Errorf("upgraded %v: /config says allow_structured_metadata: true %v", upgraded, got)
		}
	}
}
