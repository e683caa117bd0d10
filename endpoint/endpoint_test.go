package endpoint

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	ok := Loki{URL: "https://loki.example/loki/api/v1/push", Tenant: "team-a"}
	for _, tc := range []struct {
		name string
		edit func(*Loki)
		want []string // "path: start of message"
	}{
		{"valid", func(*Loki) {}, nil},
		{"basic auth", func(l *Loki) { l.BasicAuth = BasicAuth{"winobs", `C:\secrets\loki`} }, nil},
		{"credentials in the URL, not echoed", func(l *Loki) { l.URL = "https://bob:hunter2@loki.example/loki/api/v1/push" },
			[]string{"loki.url: must not carry credentials"}},
		{"not http", func(l *Loki) { l.URL = "ftp://loki.example/" }, []string{"loki.url: must be an absolute http(s) URL"}},
		{"template braces", func(l *Loki) { l.URL = "https://loki.example/{{.x}}" }, []string{"loki.url: must not contain spaces, quotes, braces"}},
		{"fragment", func(l *Loki) { l.URL = "https://loki.example/push#x" }, []string{"loki.url: must not have a #fragment"}},
		{"header injection in the tenant", func(l *Loki) { l.Tenant = "a\r\nX-Evil: 1" }, []string{"loki.tenant: must be a Loki tenant ID"}},
		{"a line separator in the tenant", func(l *Loki) { l.Tenant = "a\u2028b" }, []string{"loki.tenant: must be a Loki tenant ID"}},
		{"the tenant ..", func(l *Loki) { l.Tenant = ".." }, []string{"loki.tenant: must be a Loki tenant ID"}},
		{"a 151-byte tenant", func(l *Loki) { l.Tenant = strings.Repeat("t", 151) }, []string{"loki.tenant: must be a Loki tenant ID"}},
		{"a colon in the user name", func(l *Loki) { l.BasicAuth = BasicAuth{"a:b", "/p"} }, []string{"loki.basicAuth.username: must not contain ':'"}},
		{"half basic auth", func(l *Loki) { l.BasicAuth.Username = "u" }, []string{"loki.basicAuth.passwordFile: basicAuth needs both"}},
		{"two kinds of auth", func(l *Loki) { l.BasicAuth = BasicAuth{"u", "/p"}; l.BearerTokenFile = "/t" },
			[]string{"loki.bearerTokenFile: use either basicAuth or bearerTokenFile"}},
		{"CA without TLS", func(l *Loki) { l.URL = "http://loki.example/loki/api/v1/push"; l.CAFile = "/ca.pem" },
			[]string{"loki.caFile: a CA file needs an https URL"}},
		{"basic auth over http", func(l *Loki) { l.URL = "http://loki.example/loki/api/v1/push"; l.BasicAuth = BasicAuth{"u", "/p"} },
			[]string{"loki.url: is plain http, so basicAuth or the bearer token would be sent in the clear"}},
		{"a bearer token over HTTP", func(l *Loki) { l.URL = "HTTP://loki.example/loki/api/v1/push"; l.BearerTokenFile = "/t" },
			[]string{"loki.url: is plain http"}},
		{"credentials over http, stated", func(l *Loki) {
			l.URL, l.BearerTokenFile, l.AllowInsecureCredentials = "http://loki.example/loki/api/v1/push", "/t", true
		}, nil},
		{"http without credentials", func(l *Loki) { l.URL = "http://loki.example/loki/api/v1/push" }, nil},
		{"a token in the query string", func(l *Loki) { l.URL = "https://loki.example/loki/api/v1/push?access_token=hunter2" },
			[]string{"loki.url: must not carry a secret in its query string"}},
		{"an API key in the query string", func(l *Loki) { l.URL = "https://loki.example/loki/api/v1/push?X-Api-Key=hunter2" },
			[]string{"loki.url: must not carry a secret in its query string"}},
		{"a harmless query", func(l *Loki) { l.URL = "https://loki.example/insert/loki/api/v1/push?disable_message_parsing=1" }, nil},
		{"a harmless tenant parameter", func(l *Loki) { l.URL = "https://loki.example/loki/api/v1/push?org=platform&region=eu" }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := ok
			tc.edit(&l)
			probs := l.Check("loki")
			if len(probs) != len(tc.want) {
				t.Fatalf("problems %v, want %v", probs, tc.want)
			}
			for i, p := range probs {
				if got := p.Path + ": " + p.Msg; !strings.HasPrefix(got, tc.want[i]) || strings.Contains(got, "hunter2") {
					t.Errorf("problem %q, want %q (and no password)", got, tc.want[i])
				}
			}
		})
	}
	// Issue 58: names of credentials in common use that were let through
	// (key=S3CR3T was rendered into the Alloy ConfigMap).
	for _, name := range []string{"key", "Key", "pass", "pwd", "access_key", "accesskey", "AccessKey", "code", "apikey", "sas_token", "password", "auth"} {
		t.Run(name, func(t *testing.T) {
			l := ok
			l.URL = "https://loki.example/loki/api/v1/push?" + name + "=hunter2"
			probs := l.Check("loki")
			if len(probs) != 1 || !strings.Contains(probs[0].Msg, "must not carry a secret in its query string") || strings.Contains(probs[0].Msg, "hunter2") {
				t.Errorf("?%s=: %v", name, probs)
			}
		})
	}
}

func TestIsLabelName(t *testing.T) {
	for s, want := range map[string]bool{"cluster": true, "_x1": true, "1x": false, "a-b": false, "": false, "k8s_cluster": true} {
		if IsLabelName(s) != want {
			t.Errorf("IsLabelName(%q) = %v", s, !want)
		}
	}
}
