// Package doctor checks, against the user's own Prometheus and Loki, that
// what gen rendered works in their cluster: every Windows node scraped by a
// tested exporter, the rule groups loaded and producing series, container
// series with their real pod labels, events and logs arriving. It knows
// what to expect because it builds the same rules and vocabulary gen does.
package doctor

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/prometheus/sigv4"
	"go.yaml.in/yaml/v3"

	"github.com/winobs/winobs/conffile"
	"github.com/winobs/winobs/endpoint"
)

// maxBody bounds one API answer: a doctor query aggregates, so a real
// answer is a few KiB (a per-node one for 5,000 nodes under 1 MiB); a huge
// one is not what was asked. Decoded, an answer costs a small multiple of
// its size, so this also bounds doctor's memory.
const maxBody = 2 << 20

// maxMessage bounds what doctor prints of an error or of a server's words:
// enough for the reason (a TLS verification failure is ~200 bytes), never
// a megabyte of a hostile answer.
const maxMessage = 512

// message is s as doctor prints it: bounded, control and format characters
// escaped.
func message(s string) string {
	if len(s) > maxMessage {
		cut := maxMessage
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = fmt.Sprintf("%s… (%d bytes)", s[:cut], len(s))
	}
	return conffile.Printable(s)
}

// Auth is how doctor authenticates to an API: a bearer token or a basic
// auth password, each read from a file, never from a flag or the
// environment, so no credential reaches a process list or a log.
type Auth struct {
	endpoint.Credentials
	endpoint.TLS
	// Tenant is sent as X-Scope-OrgID (a multi-tenant Loki or Mimir).
	Tenant string
	// SigV4Region signs every request with AWS SigV4 for that region
	// (Amazon Managed Service for Prometheus, service aps), credentials
	// from AWS's standard chain (the environment, a profile, an instance
	// or pod identity), never a flag.
	SigV4Region string
}

// API is a Prometheus- or Loki-compatible HTTP API.
type API struct {
	name   string // "Prometheus" or "Loki", for messages
	base   *url.URL
	client *http.Client
	auth   Auth
}

// NewLokiAPI is NewAPI for Loki, from its base URL or its push endpoint
// (users copy the one loki.url holds): doctor reads from the base.
func NewLokiAPI(rawURL string, auth Auth, timeout time.Duration) (*API, error) {
	return NewAPI("Loki", endpoint.LokiBaseURL(rawURL), auth, timeout)
}

// NewAPI checks the URL (http or https, no credentials, no secret in the
// query) and builds the client (endpoint.NewHTTPClient: TLS verified, a
// client certificate when auth names one, the environment's proxy, no
// redirect followed) that times out.
func NewAPI(name, rawURL string, auth Auth, timeout time.Duration) (*API, error) {
	u, err := endpoint.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("%s URL %w", name, err)
	}
	// Over plain http only to a literal loopback address (a port-forward):
	// a name, "localhost" included, may resolve anywhere.
	if ip, err := netip.ParseAddr(u.Hostname()); (auth.BearerTokenFile != "" || auth.Username != "") && u.Scheme != "https" && (err != nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("%s URL is plain http to %s: credentials would be sent in the clear; use https, or a loopback address such as 127.0.0.1 for a port-forward (a name, localhost too, may resolve elsewhere)", name, u.Hostname())
	}
	if strings.Contains(auth.Username, ":") {
		// RFC 7617: the server splits user and password at the first colon.
		return nil, fmt.Errorf("%s: the basic auth user name must not contain ':': the server would read the rest as the password", name)
	}
	if auth.BearerTokenFile != "" && auth.Username != "" {
		return nil, fmt.Errorf("%s: use a bearer token or basic auth, not both", name)
	}
	if (auth.Username == "") != (auth.PasswordFile == "") {
		return nil, fmt.Errorf("%s: basic auth needs both the user name and the password file (--%s-username, --%[2]s-password-file)", name, strings.ToLower(name))
	}
	if msg := endpoint.CheckTenant(auth.Tenant); auth.Tenant != "" && msg != "" {
		return nil, fmt.Errorf("%s tenant (X-Scope-OrgID): %s", name, msg)
	}
	client, err := endpoint.NewHTTPClient(auth.TLS, timeout)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if auth.SigV4Region != "" {
		if auth.BearerTokenFile != "" || auth.Username != "" {
			return nil, fmt.Errorf("%s: SigV4 signs the requests: give no bearer token or basic auth", name)
		}
		if u.Scheme != "https" {
			return nil, fmt.Errorf("%s URL is plain http: SigV4 requests go to AWS over https", name)
		}
		rt, err := sigv4.NewSigV4RoundTripper(&sigv4.SigV4Config{Region: auth.SigV4Region}, client.Transport)
		if err != nil {
			return nil, fmt.Errorf("%s: SigV4: %w (AWS credentials come from the standard chain: AWS_PROFILE, the environment, or the instance's or pod's identity)", name, err)
		}
		client.Transport = rt
	}
	return &API{name: name, base: u, auth: auth, client: client}, nil
}

// Error is an API answer doctor could not use, worded for the user.
type Error struct {
	API, Path string
	Status    int
	Msg       string
}

// Limit names the setting that refused the answer as too large, read from
// the server's words ("" for any other failure): at fleet size a check can
// meet one, and has then read nothing, which is neither a pass nor a
// finding.
func (e *Error) Limit() string { return limitOf(e.Msg) }

// answerLimits are the refusals of an answer as too large, by a marker of
// their message (Loki's pkg/logqlmodel, pkg/querier/queryrange and
// pkg/util/validation; Prometheus' promql.ErrTooManySamples; doctor's own
// bound), and the setting each names.
var answerLimits = []struct{ marker, setting string }{
	{"maximum number of series", "Loki's limits_config.max_query_series"},
	{"maximum of series", "Loki's limits_config.max_query_series"},
	{"max_entries_limit_per_query", "Loki's limits_config.max_entries_limit_per_query"},
	{"the query time range exceeds the limit", "Loki's limits_config.max_query_length"},
	{"would load too many samples into memory", "Prometheus' --query.max-samples"},
	{"the answer is larger than", fmt.Sprintf("doctor's bound on one answer (%d MiB)", maxBody>>20)},
}

// limitOf is the setting a message says refused an answer, or "".
func limitOf(msg string) string {
	for _, l := range answerLimits {
		if strings.Contains(msg, l.marker) {
			return l.setting
		}
	}
	return ""
}

func (e *Error) Error() string {
	msg := e.Msg
	if limit := e.Limit(); limit != "" {
		msg += " (the limit: " + limit + ")"
	}
	if e.Status != 0 {
		return fmt.Sprintf("%s %s: HTTP %d: %s", e.API, e.Path, e.Status, msg)
	}
	return fmt.Sprintf("%s %s: %s", e.API, e.Path, msg)
}

// get sends a GET to path with params and decodes the API's JSON envelope
// ({"status":"success","data":…}) into data.
func (a *API) get(ctx context.Context, path string, params url.Values, data any) error {
	body, status, err := a.fetch(ctx, path, params)
	if err != nil {
		return err
	}
	var env struct {
		Status    string          `json:"status"`
		Data      json.RawMessage `json:"data"`
		ErrorType string          `json:"errorType"`
		Error     string          `json:"error"`
		Warnings  []string        `json:"warnings"`
	}
	if err := json.Unmarshal(body, &env); err != nil || env.Status == "" {
		return a.notJSON(path, status, body)
	}
	if env.Status != "success" {
		return &Error{API: a.name, Path: path, Status: status, Msg: message(env.ErrorType + ": " + env.Error)}
	}
	// A partial answer (a limit reached, said in a warning) is no answer:
	// what it leaves out could be what the check looks for.
	for _, w := range env.Warnings {
		if limitOf(w) != "" {
			return &Error{API: a.name, Path: path, Status: status, Msg: "a partial answer: " + message(w)}
		}
	}
	if len(env.Data) == 0 {
		return nil // Loki leaves data out when nothing matches (label values): no data
	}
	if err := json.Unmarshal(env.Data, data); err != nil {
		return &Error{API: a.name, Path: path, Status: status, Msg: "unexpected data: " + message(err.Error())}
	}
	return nil
}

// getPlain decodes an answer without the envelope (Loki's buildinfo).
func (a *API) getPlain(ctx context.Context, path string, data any) error {
	body, status, err := a.fetch(ctx, path, nil)
	if err != nil {
		return err
	}
	if status != http.StatusOK || json.Unmarshal(body, data) != nil {
		return a.notJSON(path, status, body)
	}
	return nil
}

// fetch sends the request and reads a bounded answer; refusals and
// redirects are errors.
func (a *API) fetch(ctx context.Context, path string, params url.Values) ([]byte, int, error) {
	u := *a.base
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	u.RawQuery = params.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, 0, &Error{API: a.name, Path: path, Msg: err.Error()}
	}
	if err := a.authorize(req); err != nil {
		return nil, 0, &Error{API: a.name, Path: path, Msg: err.Error()}
	}
	if a.auth.Tenant != "" {
		req.Header.Set("X-Scope-OrgID", a.auth.Tenant)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		// The URL's userinfo is refused; the error holds no credential.
		return nil, 0, &Error{API: a.name, Path: path, Msg: "cannot reach it: " + message(err.Error())}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return nil, 0, &Error{API: a.name, Path: path, Status: resp.StatusCode, Msg: "reading the answer: " + err.Error()}
	}
	if len(body) > maxBody {
		return nil, 0, &Error{API: a.name, Path: path, Status: resp.StatusCode, Msg: fmt.Sprintf("the answer is larger than %d bytes", maxBody)}
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized && strings.TrimSpace(string(body)) == "no org id":
		// Loki and Mimir with auth_enabled say so without a tenant: not a
		// credentials problem.
		return nil, 0, &Error{API: a.name, Path: path, Status: resp.StatusCode,
			Msg: "no org id: this " + a.name + " is multi-tenant and needs a tenant (X-Scope-OrgID): set loki.tenant in the config or --" + strings.ToLower(a.name) + "-tenant"}
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return nil, 0, &Error{API: a.name, Path: path, Status: resp.StatusCode,
			Msg: "refused: check the credentials (--" + strings.ToLower(a.name) + "-bearer-token-file or basic auth) and that they may read this API"}
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return nil, 0, &Error{API: a.name, Path: path, Status: resp.StatusCode,
			Msg: "redirects to " + message(endpoint.Redact(resp.Header.Get("Location"))) + ": give that URL instead (redirects are not followed)"}
	}
	return body, resp.StatusCode, nil
}

// notJSON words an answer that is not the API's JSON.
func (a *API) notJSON(path string, status int, body []byte) error {
	text := message(strings.TrimSpace(string(body)))
	switch {
	case status == http.StatusNotFound:
		return &Error{API: a.name, Path: path, Status: status, Msg: "no such path (" + text + "): not " + a.name + "'s API; give its base URL, without a path"}
	case status >= 400:
		return &Error{API: a.name, Path: path, Status: status, Msg: text} // Loki's errors are plain text
	}
	return &Error{API: a.name, Path: path, Status: status, Msg: "the answer is not " + a.name + "'s API (" + text + ")"}
}

func (a *API) authorize(req *http.Request) error { return a.auth.Authorize(req) }

// Sample is one series of an instant vector.
type Sample struct {
	Metric map[string]string
	Value  float64
}

// Query runs an instant query (Prometheus /api/v1/query, Loki
// /loki/api/v1/query) and returns its vector.
func (a *API) Query(ctx context.Context, expr string) ([]Sample, error) {
	path := "/api/v1/query"
	if a.name == "Loki" {
		path = "/loki/api/v1/query"
	}
	var data struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		} `json:"result"`
	}
	if err := a.get(ctx, path, url.Values{"query": {expr}}, &data); err != nil {
		return nil, err
	}
	if data.ResultType != "vector" {
		return nil, &Error{API: a.name, Path: path, Msg: "expected a vector, got " + strconv.Quote(data.ResultType)}
	}
	out := make([]Sample, 0, len(data.Result))
	for _, r := range data.Result {
		s, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		// Every doctor query counts, sums or compares: NaN or an infinity
		// is a server doctor cannot believe, never a value to judge.
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, &Error{API: a.name, Path: path, Msg: "a sample value that is not a finite number: " + message(strconv.Quote(s))}
		}
		out = append(out, Sample{Metric: r.Metric, Value: v})
	}
	return out, nil
}

// LabelValues returns the values of label name on the series that match
// selector in the last `since` (Loki's /loki/api/v1/label/NAME/values,
// which no series limit bounds).
func (a *API) LabelValues(ctx context.Context, name, selector string, since time.Duration) ([]string, error) {
	params := url.Values{"since": {since.String()}}
	if selector != "" {
		params.Set("query", selector)
	}
	var data []string
	if err := a.get(ctx, "/loki/api/v1/label/"+url.PathEscape(name)+"/values", params, &data); err != nil {
		return nil, err
	}
	return data, nil
}

// ExternalLabels returns the external labels of a Prometheus's loaded
// configuration (/api/v1/status/config): added to what leaves it (remote
// write, federation, alerts), never shown in its own query answers.
func (a *API) ExternalLabels(ctx context.Context) (map[string]string, error) {
	var data struct {
		YAML string `json:"yaml"`
	}
	if err := a.get(ctx, "/api/v1/status/config", nil, &data); err != nil {
		return nil, err
	}
	var cfg struct {
		Global struct {
			ExternalLabels map[string]string `yaml:"external_labels"`
		} `yaml:"global"`
	}
	if err := yaml.Unmarshal([]byte(data.YAML), &cfg); err != nil {
		return nil, &Error{API: a.name, Path: "/api/v1/status/config", Msg: "the configuration is not YAML: " + message(err.Error())}
	}
	return cfg.Global.ExternalLabels, nil
}

// BuildInfo returns the server's version ("" when built without one).
func (a *API) BuildInfo(ctx context.Context) (string, error) {
	path := "/api/v1/status/buildinfo"
	if a.name == "Loki" {
		path = "/loki/api/v1/status/buildinfo"
	}
	var data struct {
		Version   *string `json:"version"`
		GoVersion string  `json:"goVersion"`
	}
	get := func() error { return a.get(ctx, path, nil, &data) }
	if a.name == "Loki" { // Loki answers the object itself, no envelope
		get = func() error { return a.getPlain(ctx, path, &data) }
	}
	if err := get(); err != nil {
		return "", err
	}
	if data.Version == nil {
		return "", &Error{API: a.name, Path: path, Msg: "the answer is not " + a.name + "'s build info"}
	}
	return *data.Version, nil
}

// LokiAllowsMetadata reads Loki's /config (YAML, no tenant needed) and
// reports whether its limits_config keeps structured metadata. Loki writes
// allow_structured_metadata only while it is true (the field is omitempty:
// pkg/validation/limits.go; a real Loki 3.7.6 with it false leaves it out,
// testdata/loki/README.md), so its absence from a limits_config that is
// there means false. A tenant's runtime overrides are not read.
func (a *API) LokiAllowsMetadata(ctx context.Context) (bool, error) {
	const path = "/config"
	body, status, err := a.fetch(ctx, path, nil)
	if err != nil {
		return false, err
	}
	var cfg struct {
		Limits map[string]any `yaml:"limits_config"`
	}
	if status != http.StatusOK || yaml.Unmarshal(body, &cfg) != nil || cfg.Limits == nil {
		return false, &Error{API: a.name, Path: path, Status: status, Msg: "not Loki's configuration: " + message(string(body))}
	}
	allowed, _ := cfg.Limits["allow_structured_metadata"].(bool)
	return allowed, nil
}

// RuleGroup is a loaded rule group as /api/v1/rules reports it.
type RuleGroup struct {
	Name  string `json:"name"`
	File  string `json:"file"`
	Rules []struct {
		Name           string    `json:"name"`
		Type           string    `json:"type"`
		Health         string    `json:"health"`
		LastError      string    `json:"lastError"`
		LastEvaluation time.Time `json:"lastEvaluation"`
	} `json:"rules"`
	Interval       float64   `json:"interval"`
	LastEvaluation time.Time `json:"lastEvaluation"`
}

// Rules returns the rule groups Prometheus has loaded.
func (a *API) Rules(ctx context.Context) ([]RuleGroup, error) {
	var data struct {
		Groups []RuleGroup `json:"groups"`
	}
	if err := a.get(ctx, "/api/v1/rules", nil, &data); err != nil {
		return nil, err
	}
	return data.Groups, nil
}

// Alert is an active alert as /api/v1/alerts reports it.
type Alert struct {
	Labels map[string]string `json:"labels"`
	State  string            `json:"state"`
}

// Alerts returns the active alerts.
func (a *API) Alerts(ctx context.Context) ([]Alert, error) {
	var data struct {
		Alerts []Alert `json:"alerts"`
	}
	if err := a.get(ctx, "/api/v1/alerts", nil, &data); err != nil {
		return nil, err
	}
	return data.Alerts, nil
}
