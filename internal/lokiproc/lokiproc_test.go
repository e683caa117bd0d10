package lokiproc

import (
	"net/http"
	"net/http/httptest"
	"testing"
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
