package doctor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql"

	"github.com/winobs/winobs/contract"
	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/gen/view"
	"github.com/winobs/winobs/internal/testkit/lokiproc"
)

// fleetSize is the fleet doctor is held to (issue 61).
const fleetSize = 1000

// answerSizes records, per API, the largest answer doctor read: its
// series (a query's result) or values (a label's values), and the query.
type answerSizes struct {
	mu      sync.Mutex
	largest map[string]answerSize
}

type answerSize struct {
	items int
	what  string
}

// wrap passes every request to h and records the size of its answer.
func (a *answerSizes) wrap(api string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		var env struct {
			Data json.RawMessage `json:"data"`
		}
		items := 0
		if json.Unmarshal(rec.Body.Bytes(), &env) == nil {
			var values []string
			var query struct {
				Result []json.RawMessage `json:"result"`
			}
			if json.Unmarshal(env.Data, &values) == nil {
				items = len(values)
			} else if json.Unmarshal(env.Data, &query) == nil {
				items = len(query.Result)
			}
		}
		what := r.URL.Path
		if q := r.URL.Query().Get("query"); q != "" {
			what += " " + q
		}
		a.mu.Lock()
		if items > a.largest[api].items {
			a.largest[api] = answerSize{items, what}
		}
		a.mu.Unlock()
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
	})
}

// At 1,000 Windows nodes every check doctor makes still answers within the
// servers' default limits, on Prometheus' own engine (its rule manager
// evaluating the rendered rules, the engine's sample limit at a fifth of
// Prometheus' default) and on a real Loki with its default limits holding
// four channels a node in its two streams: every check passes, none is refused as too
// large, and the largest answers are logged (make bench reports them:
// BenchmarkDoctorAtFleetSize).
func TestDoctorAtFleetSize(t *testing.T) {
	if testing.Short() {
		t.Skip("a 1,000-node fleet: not in -short")
	}
	rep, sizes := doctorAtFleet(t)
	var out bytes.Buffer
	rep.WriteText(&out)
	healthyReport(t, rep)
	for _, want := range []string{"1000 Windows nodes in kube-state-metrics, 1000 exporter targets", "1000 of 1000 running Windows containers covered", "1000 nodes, channels"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, out.String())
		}
	}
	for _, api := range []string{"Prometheus", "Loki"} {
		l := sizes[api]
		t.Logf("largest %s answer at %d nodes: %d items (%s)", api, fleetSize, l.items, l.what)
	}
	for _, api := range []string{"Prometheus", "Loki"} {
		if l := sizes[api]; l.items < fleetSize {
			t.Errorf("no %s answer listed the fleet's nodes: %+v", api, l)
		}
	}
}

// BenchmarkDoctorAtFleetSize runs doctor once against the 1,000-node fleet
// and reports its largest answers and the checks that did not pass.
func BenchmarkDoctorAtFleetSize(b *testing.B) {
	for b.Loop() {
		rep, sizes := doctorAtFleet(b)
		notPassed := 0
		for _, c := range rep.Checks {
			if c.Status != Pass && c.ID != "cluster-label" && c.ID != "shipper-counters" {
				notPassed++
			}
		}
		b.ReportMetric(float64(fleetSize), "nodes")
		b.ReportMetric(float64(sizes["Prometheus"].items), "largest_prometheus_series")
		b.ReportMetric(float64(sizes["Loki"].items), "largest_loki_items")
		b.ReportMetric(float64(notPassed), "checks_not_passed")
	}
}

// doctorAtFleet runs doctor against fleetSize Windows nodes: Prometheus'
// engine over the fixture cluster at that size, and a real Loki holding
// what the agents push for them. It returns the report and the largest
// answer of each API.
func doctorAtFleet(t testing.TB) (Report, map[string]answerSize) {
	t.Helper()
	loki := lokiproc.Start(t, lokiproc.Options{})
	cfg := config.Default()
	c := healthy()
	c.nodes = nil
	for i := range fleetSize {
		c.nodes = append(c.nodes, fmt.Sprintf("akswin%06d", i))
	}
	pushFleet(t, loki, cfg, c.nodes)

	sizes := &answerSizes{largest: map[string]answerSize{}}
	target, err := url.Parse(loki.URL)
	if err != nil {
		t.Fatal(err)
	}
	f := newFakeProm(t, cfg, c)
	prom := newTestAPI(t, "Prometheus", sizes.wrap("Prometheus", f), Auth{})
	lokiAPI := newTestAPI(t, "Loki", sizes.wrap("Loki", httputil.NewSingleHostReverseProxy(target)), Auth{})
	return Run(context.Background(), view.ForDoctor(cfg), prom, lokiAPI), sizes.largest
}

// pushFleet pushes, as the agents label them, one event for each of four
// channels of every node (the channel as structured metadata: 2,000
// streams, a node's two classes) and pod log lines from a tenth of the
// nodes.
func pushFleet(t testing.TB, loki *lokiproc.Loki, cfg *config.Config, nodes []string) {
	t.Helper()
	now := strconv.FormatInt(time.Now().Add(-time.Minute).UnixNano(), 10)
	type stream struct {
		Stream map[string]string `json:"stream"`
		Values [][]any           `json:"values"`
	}
	var streams []stream
	flush := func() {
		body, err := json.Marshal(map[string]any{"streams": streams})
		if err != nil {
			t.Fatal(err)
		}
		if code, answer := loki.Push(t, "", "application/json", body); code != http.StatusNoContent {
			t.Fatalf("push: %d %s", code, answer)
		}
		streams = streams[:0]
	}
	channels := []string{config.ChannelSystem, config.ChannelApplication, config.ChannelSecurity, config.ChannelHNS}
	for i, n := range nodes {
		for _, ch := range channels {
			line := fmt.Sprintf(`{"source":"Service Control Manager","channel":%q,"computer":%q,"event_id":7036,"levelText":"Information","message":"the service entered the running state"}`, ch, strings.ToUpper(n))
			streams = append(streams, stream{Stream: map[string]string{contract.LabelJob: cfg.Logs.EventsJob, contract.LabelNode: n,
				contract.LabelClass: contract.EventClass(ch), contract.LabelComputer: strings.ToUpper(n)},
				Values: [][]any{{now, line, map[string]string{contract.LabelChannel: ch}}}})
		}
		if i%10 == 0 {
			streams = append(streams, stream{Stream: map[string]string{contract.LabelJob: cfg.Logs.PodLogsJob, contract.LabelNode: n,
				contract.LabelNamespace: "shop", contract.LabelPod: "app-" + n, contract.LabelContainer: "app"}, Values: [][]any{{now, "started"}}})
		}
		if len(streams) >= 400 {
			flush()
		}
	}
	if len(streams) > 0 {
		flush()
	}
}

// An answer a server refuses as too large (Loki's max_query_series in its
// recorded words, Prometheus' sample limit from its own engine, a partial
// answer Loki flags in a warning) skips the check naming the limit: never
// a pass, and no finding about the cluster.
func TestAnswerTooLargeIsASkipNamingTheLimit(t *testing.T) {
	cfg := config.Default()
	nodes := []string{"win-1", "win-2", "win-3"}
	for name, answer := range map[string]http.HandlerFunc{
		"max_query_series": func(w http.ResponseWriter, r *http.Request) {
			recorded(t, "loki-api", "mt-query-max-series")(w, r)
		},
		"partial": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[]},"warnings":["maximum number of series (500) reached for a single query; returning partial results"]}`))
		},
	} {
		loki := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/loki/api/v1/query" {
				answer(w, r)
				return
			}
			writeJSON(w, nodes)
		})
		r := &run{v: view.ForDoctor(cfg), loki: newTestAPI(t, "Loki", loki, Auth{}),
			facts: facts{t: view.ForDoctor(cfg).Terms, lt: view.ForDoctor(cfg).Terms, windowsNodes: nodes}}
		got := r.eventsPerNode(context.Background(), Check{})
		if text := strings.Join(got.Evidence, " "); got.Status != Skip || !strings.Contains(text, "Loki's limits_config.max_query_series") || !strings.Contains(got.Fix, "raise Loki's limits_config.max_query_series") {
			t.Errorf("%s: %s %q (fix %q), want a skip naming max_query_series", name, got.Status, text, got.Fix)
		}
	}

	rep := runDoctor(t, cfg, healthy(), func(f *fakeProm) {
		f.engine = promql.NewEngine(promql.EngineOpts{MaxSamples: 2, Timeout: time.Minute, LookbackDelta: 5 * time.Minute, Parser: testParser})
	}, nil)
	limited := 0
	for _, c := range rep.Checks {
		text := strings.Join(c.Evidence, " ")
		if !strings.Contains(text, "Prometheus' --query.max-samples") {
			continue
		}
		limited++
		if c.Status == Pass {
			t.Errorf("%s passed on a refused answer: %s", c.ID, text)
		}
	}
	if testing.Verbose() || limited == 0 {
		var out bytes.Buffer
		rep.WriteText(&out)
		t.Logf("the report:\n%s", out.String())
	}
	if limited == 0 {
		t.Error("no check names the sample limit")
	}
}
