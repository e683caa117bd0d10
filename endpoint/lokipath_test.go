package endpoint_test

import (
	"strings"
	"testing"

	"github.com/winobs/winobs/endpoint"
)

// Issue 51: users copy Loki's base URL or its push endpoint; both reach the
// agents as the push endpoint and doctor as the base.
func TestLokiURLForms(t *testing.T) {
	for _, tc := range []struct{ in, push, base, err string }{
		{"https://loki.example.org", "https://loki.example.org/loki/api/v1/push", "https://loki.example.org", ""},
		{"https://loki.example.org/", "https://loki.example.org/loki/api/v1/push", "https://loki.example.org/", ""},
		{"http://10.0.0.5:3100/loki/api/v1/push", "http://10.0.0.5:3100/loki/api/v1/push", "http://10.0.0.5:3100", ""},
		{"https://gw.example.org/logs", "https://gw.example.org/logs/loki/api/v1/push", "https://gw.example.org/logs", ""},
		{"https://gw.example.org/logs/loki/api/v1/push?org=a", "https://gw.example.org/logs/loki/api/v1/push?org=a", "https://gw.example.org/logs", ""},
		{"https://gw.example.org/logs?org=a", "https://gw.example.org/logs/loki/api/v1/push?org=a", "https://gw.example.org/logs?org=a", ""},
		{"https://loki.example.org/loki/api/v1/query_range", "", "", "another of Loki's API paths (/loki/api/v1/query_range)"},
		{"ftp://loki.example.org", "", "", "must be an absolute http(s) URL"},
	} {
		push, err := endpoint.LokiPushURL(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %q %v, want error %q", tc.in, push, err, tc.err)
			}
			continue
		}
		if err != nil || push != tc.push {
			t.Errorf("LokiPushURL(%s) = %q %v, want %q", tc.in, push, err, tc.push)
		}
		if base := endpoint.LokiBaseURL(tc.in); base != tc.base {
			t.Errorf("LokiBaseURL(%s) = %q, want %q", tc.in, base, tc.base)
		}
		if again, _ := endpoint.LokiPushURL(endpoint.LokiBaseURL(tc.push)); again != strings.Split(tc.push, "?")[0] && again != tc.push {
			t.Errorf("%s: base and back: %q", tc.in, again)
		}
	}
}
