package doctor

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/winobs/winobs/endpoint"
	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/gen/rules"
	"github.com/winobs/winobs/gen/view"
	"github.com/winobs/winobs/internal/testkit/fixture"
)

// recorded answers a request with a capture of a real Prometheus 3.16 or
// Loki 3.7.6 (testdata/prometheus-api, testdata/loki-api): the status line's
// code and the body byte for byte.
func recorded(t *testing.T, dir, name string) http.HandlerFunc {
	t.Helper()
	body, status := fixture.Read(t, dir, name+".body"), fixture.Read(t, dir, name+".status")
	code := 200
	if f := strings.Fields(string(status)); len(f) > 1 {
		if n, err := strconv.Atoi(f[1]); err == nil {
			code = n
		}
	}
	return func(w http.ResponseWriter, _ *http.Request) {
		if strings.HasPrefix(string(body), "{") {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(code)
		w.Write(body)
	}
}

func newTestAPI(t testing.TB, name string, h http.Handler, auth Auth) *API {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	a, err := NewAPI(name, srv.URL, auth, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// The client reads real answers: a vector, an empty result, the loaded
// rules, the alerts, the build info; and words every failure for the user.
func TestPrometheusClientOnRecordedAnswers(t *testing.T) {
	ctx := context.Background()
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v1/status/buildinfo", recorded(t, "prometheus-api", "buildinfo"))
	mux.HandleFunc("/api/v1/rules", recorded(t, "prometheus-api", "rules"))
	mux.HandleFunc("/api/v1/alerts", recorded(t, "prometheus-api", "alerts"))
	mux.HandleFunc("/api/v1/query", func(w http.ResponseWriter, r *http.Request) {
		name := map[string]string{"up": "query-up", "kube_node_info": "query-empty", "count(": "query-bad"}[r.URL.Query().Get("query")]
		if name == "" {
			name = "query-count"
		}
		recorded(t, "prometheus-api", name)(w, r)
	})
	a := newTestAPI(t, "Prometheus", mux, Auth{})
	if v, err := a.BuildInfo(ctx); err != nil || v != "" {
		t.Errorf("buildinfo %q %v", v, err)
	}
	up, err := a.Query(ctx, "up")
	if err != nil || len(up) == 0 || up[0].Metric["job"] == "" {
		t.Errorf("up: %v %v", up, err)
	}
	cnt, err := a.Query(ctx, "count by (collector) (windows_exporter_collector_success == 1)")
	if err != nil || len(cnt) != 1 || cnt[0].Metric["collector"] != "container" || cnt[0].Value != 1 {
		t.Errorf("count: %v %v", cnt, err)
	}
	if empty, err := a.Query(ctx, "kube_node_info"); err != nil || len(empty) != 0 {
		t.Errorf("empty: %v %v", empty, err)
	}
	if _, err := a.Query(ctx, "count("); err == nil || !strings.Contains(err.Error(), "HTTP 400: bad_data: invalid parameter") {
		t.Errorf("bad query: %v", err)
	}
	groups, err := a.Rules(ctx)
	if err != nil || len(groups) != 2 {
		t.Fatalf("rules: %v %v", groups, err)
	}
	n := 0
	for _, g := range groups {
		n += len(g.Rules)
		if g.LastEvaluation.IsZero() || g.Rules[0].Health != "ok" {
			t.Errorf("group %s: %+v", g.Name, g)
		}
	}
	if n != 21 {
		t.Errorf("%d rules, the capture holds 21", n)
	}
	if alerts, err := a.Alerts(ctx); err != nil || len(alerts) != 0 {
		t.Errorf("alerts: %v %v", alerts, err)
	}
}

// Loki's query API answers the same envelope; its errors are plain text.
func TestLokiClientOnRecordedAnswers(t *testing.T) {
	ctx := context.Background()
	mux := http.NewServeMux()
	mux.HandleFunc("/loki/api/v1/status/buildinfo", recorded(t, "loki-api", "buildinfo"))
	mux.HandleFunc("/loki/api/v1/query", func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Query().Get("query"), "count_over_time") {
			recorded(t, "loki-api", "query-count-by-node")(w, r)
			return
		}
		recorded(t, "loki-api", "query-bad")(w, r)
	})
	a := newTestAPI(t, "Loki", mux, Auth{})
	if _, err := a.BuildInfo(ctx); err != nil {
		t.Error(err)
	}
	ss, err := a.Query(ctx, `sum by (cluster, node, channel) (count_over_time({job="windows-events"}[1h]))`)
	if err != nil || len(ss) != 2 || ss[1].Metric["node"] != "win-node-1" || ss[1].Value != 2 {
		t.Errorf("%v %v", ss, err)
	}
	if _, err := a.Query(ctx, `sum(`); err == nil || !strings.Contains(err.Error(), "HTTP 400: parse error at line 1") {
		t.Errorf("bad: %v", err)
	}
}

// An API that cannot be used says why, in words that lead to the fix:
// unreachable, refused, a redirect, a path of the other system, an answer
// that is not the API; and no credential is ever in the message.
func TestAPIFailuresAreWorded(t *testing.T) {
	ctx := context.Background()
	token := filepath.Join(t.TempDir(), "token")
	os.WriteFile(token, []byte("s3cret-token\n"), 0o600)
	var gotAuth string
	for _, tc := range []struct {
		name    string
		api     string
		handler http.HandlerFunc
		want    string
	}{
		{"Loki given as Prometheus", "Prometheus", recorded(t, "loki-api", "wrong-path"), "HTTP 404: no such path (404 page not found): not Prometheus's API"},
		{"Prometheus given as Loki", "Loki", recorded(t, "prometheus-api", "wrong-path"), "HTTP 404: no such path"},
		{"refused", "Prometheus", func(w http.ResponseWriter, r *http.Request) {
			gotAuth = r.Header.Get("Authorization")
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
		}, "HTTP 401: refused: check the credentials"},
		{"forbidden", "Prometheus", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "Forbidden", http.StatusForbidden) }, "HTTP 403: refused"},
		{"a redirect to a login page", "Prometheus", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "https://sso.example/login?token=abc", http.StatusFound)
		}, "HTTP 302: redirects to https://sso.example/login?token=abc: give that URL instead"},
		{"an HTML page", "Prometheus", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("<html><body>Grafana</body></html>")) },
			"the answer is not Prometheus's API (<html><body>Grafana</body></html>)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newTestAPI(t, tc.api, tc.handler, Auth{Credentials: endpoint.Credentials{BearerTokenFile: token}})
			_, err := a.BuildInfo(ctx)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), "s3cret") {
				t.Errorf("the token is in the message: %v", err)
			}
		})
	}
	if gotAuth != "Bearer s3cret-token" {
		t.Errorf("the token file was not sent: %q", gotAuth)
	}
	a, err := NewAPI("Prometheus", "http://127.0.0.1:1", Auth{}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.BuildInfo(ctx); err == nil || !strings.Contains(err.Error(), "cannot reach it") {
		t.Errorf("closed port: %v", err)
	}
}

// URLs with credentials, secrets in the query or credentials over plain
// http to another host are refused before anything is sent.
func TestNewAPIRefusesUnsafeURLs(t *testing.T) {
	for _, tc := range []struct {
		url  string
		auth Auth
		want string
	}{
		{"https://bob:pw@prom.example", Auth{}, "must not carry credentials"},
		{"https://prom.example/?access_token=x", Auth{}, "must not carry a secret"},
		{"http://prom.example:9090", Auth{Credentials: endpoint.Credentials{BearerTokenFile: "/t"}}, "plain http"},
		{"ftp://prom.example", Auth{}, "absolute http(s) URL"},
		{"https://prom.example", Auth{Credentials: endpoint.Credentials{BearerTokenFile: "/t", Username: "u", PasswordFile: "/p"}}, "not both"},
		{"https://prom.example", Auth{Credentials: endpoint.Credentials{PasswordFile: "/p"}}, "basic auth needs both"},
		{"https://prom.example", Auth{Tenant: "team\nX-Evil: 1"}, "tenant (X-Scope-OrgID)"},
		{"https://prom.example", Auth{TLS: endpoint.TLS{CertFile: "/c"}}, "both its certificate file and its key file"},
		// Issue 58: the name localhost may resolve through DNS (a fake
		// resolver sent the token to 127.0.0.2's impostor); a user name
		// with ':' gives the server another password (RFC 7617).
		{"http://localhost:9090", Auth{Credentials: endpoint.Credentials{BearerTokenFile: "/t"}}, "plain http to localhost"},
		{"http://localhost.:9090", Auth{Credentials: endpoint.Credentials{Username: "u", PasswordFile: "/p"}}, "plain http"},
		{"https://prom.example", Auth{Credentials: endpoint.Credentials{Username: "a:b", PasswordFile: "/p"}}, "must not contain ':'"},
	} {
		if _, err := NewAPI("Prometheus", tc.url, tc.auth, time.Second); err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), ":pw@") {
			t.Errorf("%s: %v, want %q", tc.url, err, tc.want)
		}
	}
	for _, u := range []string{"http://127.0.0.1:9090", "http://127.0.0.2:9090", "http://[::1]:9090"} {
		if _, err := NewAPI("Prometheus", u, Auth{Credentials: endpoint.Credentials{BearerTokenFile: "/t"}}, time.Second); err != nil {
			t.Errorf("a loopback port-forward may use http: %s: %v", u, err)
		}
	}
}

// The rule check on answers recorded from the doctor-e2e Prometheus: both
// groups loaded and fresh pass; a group not loaded, or groups not evaluated
// for an hour, fail with that said.
func TestRulesLoadedOnRecordedAnswers(t *testing.T) {
	recordedAt := time.Date(2026, 12, 4, 2, 13, 14, 0, time.UTC)
	for _, tc := range []struct {
		body string
		now  time.Time
		want string
	}{
		{"rules", recordedAt, ""},
		{"rules-records-not-loaded", recordedAt, "group winobs-windows-records is not loaded"},
		{"rules", recordedAt.Add(time.Hour), "group winobs-windows-records was last evaluated 1h0m"},
	} {
		mux := http.NewServeMux()
		mux.HandleFunc("/api/v1/rules", recorded(t, filepath.Join("prometheus-api", "e2e"), tc.body))
		r := &run{v: view.ForDoctor(config.Default()), prom: newTestAPI(t, "Prometheus", mux, Auth{}), now: func() time.Time { return tc.now }}
		var err error
		if r.rules, err = rules.Build(r.v.Rules); err != nil {
			t.Fatal(err)
		}
		r.promGroups, r.promGroupsErr = r.prom.Rules(context.Background())
		c := r.rulesLoaded(context.Background(), Check{})
		text := strings.Join(c.Evidence, "\n")
		switch {
		case tc.want == "" && c.Status != Pass:
			t.Errorf("%s: %s %s", tc.body, c.Status, text)
		case tc.want != "" && (c.Status != Fail || !strings.Contains(text, tc.want)):
			t.Errorf("%s at %s: %s %s, want %q", tc.body, tc.now, c.Status, text, tc.want)
		}
	}
}

// The one-down answer and the type error as the client reads them.
func TestQueryOnRecordedE2EAnswers(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v1/query", func(w http.ResponseWriter, r *http.Request) {
		name := "query-up-one-down"
		if r.URL.Query().Get("query") != "up" {
			name = "query-bad-range"
		}
		recorded(t, filepath.Join("prometheus-api", "e2e"), name)(w, r)
	})
	a := newTestAPI(t, "Prometheus", mux, Auth{})
	up, err := a.Query(context.Background(), "up")
	if err != nil || len(up) != 4 {
		t.Fatalf("%v %v", up, err)
	}
	down := 0
	for _, s := range up {
		if s.Value == 0 && s.Metric["node"] == "win-2" {
			down++
		}
	}
	if down != 1 {
		t.Errorf("%v", up)
	}
	if _, err := a.Query(context.Background(), "rate(up)"); err == nil || !strings.Contains(err.Error(), "expected type range vector") {
		t.Errorf("%v", err)
	}
}

// A hostile or broken server cannot flood the output or memory: an error
// of a megabyte is printed to a bound with its length, an answer over the
// cap is refused unread, and format characters are escaped.
func TestHostileAnswersAreBounded(t *testing.T) {
	ctx := context.Background()
	huge := strings.Repeat("x", 1<<20)
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v1/query", func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("query") {
		case "error":
			w.WriteHeader(422)
			fmt.Fprintf(w, `{"status":"error","errorType":"execution","error":"%s"}`, huge)
		case "big":
			fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":"%s"},"value":[1,"1"]}]}}`, strings.Repeat("y", maxBody))
		case "bidi":
			fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"node":"win\u200e-1\u202e"},"value":[1,"1"]}]}}`)
		}
	})
	a := newTestAPI(t, "Prometheus", mux, Auth{})
	if _, err := a.Query(ctx, "error"); err == nil || len(err.Error()) > maxMessage+200 || !strings.Contains(err.Error(), "(1048587 bytes)") {
		t.Errorf("a 1 MiB error: %.200v (%d bytes)", err, len(fmt.Sprint(err)))
	}
	if _, err := a.Query(ctx, "big"); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("an answer over the cap: %.200v", err)
	}
	ss, err := a.Query(ctx, "bidi")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	Report{Checks: []Check{{ID: "x", Status: Fail, Evidence: []string{ss[0].Metric["node"]}}}}.WriteText(&out)
	if strings.ContainsAny(out.String(), "\u200e\u202e") || !strings.Contains(out.String(), `win\u200e-1\u202e`) {
		t.Errorf("format characters printed raw: %q", out.String())
	}
}

// A real Prometheus with external labels (testdata/prometheus-api/
// external-labels-*) names them in its configuration and never in its own
// query answers: doctor reads them from the configuration.
func TestExternalLabelsOnRecordedAnswers(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v1/status/config", recorded(t, "prometheus-api", "external-labels-status-config"))
	mux.HandleFunc("/api/v1/query", recorded(t, "prometheus-api", "external-labels-query-up"))
	a := newTestAPI(t, "Prometheus", mux, Auth{})
	ext, err := a.ExternalLabels(context.Background())
	if err != nil || len(ext) != 1 || ext["cluster"] != "prod-eu-1" {
		t.Errorf("external labels %v %v", ext, err)
	}
	up, err := a.Query(context.Background(), "up")
	if err != nil || len(up) == 0 || up[0].Metric["cluster"] != "" {
		t.Errorf("up %v %v: the recorded series carry no cluster label", up, err)
	}
}

// Per-node answers stay far under the answer cap at 5,000 nodes: the
// largest, max by (instance, node) (up), in Prometheus's own encoding.
func TestPerNodeAnswersFitTheCapAt5000Nodes(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"status":"success","data":{"resultType":"vector","result":[`)
	for i := range 5000 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"metric":{"instance":"10.%d.%d.%d:9182","node":"aks-winpool-%08d"},"value":[1796357523.155,"1"]}`, i/65536, i/256%256, i%256, i)
	}
	b.WriteString("]}}")
	if b.Len() > maxBody/2 {
		t.Errorf("5,000 nodes answer %d bytes, over half the %d-byte cap", b.Len(), maxBody)
	}
}

// --loki takes Loki's base URL or the push endpoint users copy from
// loki.url (issue 51): both query the same paths.
func TestLokiAPIFromEitherURL(t *testing.T) {
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"success","data":["channel"]}`))
	}))
	t.Cleanup(srv.Close)
	for _, raw := range []string{srv.URL, srv.URL + "/loki/api/v1/push"} {
		a, err := NewLokiAPI(raw, Auth{}, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var data []string
		if err := a.get(context.Background(), "/loki/api/v1/labels", nil, &data); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
	}
	if want := []string{"/loki/api/v1/labels", "/loki/api/v1/labels"}; !slices.Equal(paths, want) {
		t.Errorf("paths %v, want %v", paths, want)
	}
}
