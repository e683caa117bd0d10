package lokirules

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Issue 58: a test file cannot lift the harness's bounds (times: 4000000
// took 1.3 GB, evaluation_interval: 1ms made 28.8 M queries); each is
// refused at load, naming the test.
func TestBoundsHold(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "rules.yaml"), []byte("groups: []\n"), 0o644)
	test := func(entry, evalTime string) string {
		return "  - name: t1\n    input_streams:\n      - stream: '{job=\"x\"}'\n        entries:\n          - " + entry +
			"\n    alert_rule_test:\n      - {eval_time: " + evalTime + ", alertname: A}\n"
	}
	for _, tc := range []struct{ body, want string }{
		{"evaluation_interval: 1ms\ntests:\n" + test("{at: 1m, line: x}", "10m"), "evaluation_interval 1ms: at least 1s"},
		{"tests:\n" + test("{at: 1m, every: 1s, times: 4000000, line: x}", "10m"), "reaches past"},
		{"tests:\n" + test("{at: 1m, every: 0s, times: 4000000, line: x}", "10m"), `test "t1": more than 100000 lines`},
		{"tests:\n" + test("{at: 1m, line: x}", "30d"), "eval_time 30d: from 0 to 1w"},
		{"evaluation_interval: 1s\ntests:\n" + test("{at: 1m, line: x}", "1h"), "is 3601 evaluations, over 2000"},
		{"tests:\n" + test("{at: 1m, times: -1, line: x}", "10m"), "must not be negative"},
	} {
		p := filepath.Join(dir, "test.yaml")
		os.WriteFile(p, []byte("rule_files: [rules.yaml]\n"+tc.body), 0o644)
		if _, _, err := Load(p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.body, err, tc.want)
		}
	}
	p := filepath.Join(dir, "ok.yaml")
	os.WriteFile(p, []byte("rule_files: [rules.yaml]\ntests:\n"+test("{at: 1m, every: 15s, times: 20, line: x}", "12m")), 0o644)
	if _, _, err := Load(p); err != nil {
		t.Errorf("a test within the bounds: %v", err)
	}
}

// A Loki that never answers ends a request at its deadline, never at go
// test's timeout.
func TestRequestsHaveADeadline(t *testing.T) {
	hang := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-hang }))
	defer srv.Close()
	defer close(hang)
	h := HTTP{URL: srv.URL, Client: &http.Client{Timeout: 200 * time.Millisecond}}
	// Without a deadline each request would wait for hang, closed only
	// when the test returns: the test would not end.
	if _, err := h.Query(context.Background(), "t", "vector(1)", time.Now()); err == nil {
		t.Fatal("a silent Loki answered")
	}
	if err := h.Push(context.Background(), "t", []byte("{}")); err == nil {
		t.Fatal("a silent Loki took a push")
	}
	if defaultClient.Timeout != RequestTimeout || RequestTimeout <= 0 {
		t.Errorf("the default client has no deadline: %v", defaultClient.Timeout)
	}
}
