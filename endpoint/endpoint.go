// Package endpoint describes the Loki push endpoint that gen's config, the
// shipper's config and the shipper's Loki client all talk about, the checks
// every description of it needs, and the one HTTP client both binaries
// reach an API with (NewHTTPClient, Credentials). It is a leaf: both
// binaries import it; of winobs it imports only conffile.
package endpoint

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/winobs/winobs/conffile"
)

// Loki is a Loki push endpoint. Secrets are never values: they are files on
// the node, read at each request, so no credential is ever written into a
// ConfigMap or a flag.
type Loki struct {
	URL             string    `yaml:"url"`
	Tenant          string    `yaml:"tenant"`
	BasicAuth       BasicAuth `yaml:"basicAuth"`
	BearerTokenFile string    `yaml:"bearerTokenFile"`
	CAFile          string    `yaml:"caFile"`
	// AllowInsecureCredentials accepts basicAuth or a bearer token over
	// plain http, which sends them in the clear: refused unless stated.
	AllowInsecureCredentials bool `yaml:"allowInsecureCredentials"`
}

// BasicAuth is a user name and the file that holds the password.
type BasicAuth struct {
	Username     string `yaml:"username"`
	PasswordFile string `yaml:"passwordFile"`
}

// Check returns every problem of e, each under prefix (such as "loki") and
// the field's path: the URL is an absolute http(s) URL without credentials,
// fragment or characters a template or shell would read; tenant and user name
// are printable text; basic auth is complete; basic auth and a bearer token
// exclude each other; a CA file needs https. Paths of the secret files are
// left to the caller, which knows the platform they live on.
func (e Loki) Check(prefix string) []conffile.Problem {
	var out []conffile.Problem
	add := func(field, format string, args ...any) {
		out = append(out, conffile.Problem{Path: prefix + "." + field, Msg: fmt.Sprintf(format, args...)})
	}
	if msg := CheckURL(e.URL); msg != "" {
		add("url", "%s", msg)
	}
	if msg := CheckTenant(e.Tenant); msg != "" {
		add("tenant", "%s", msg)
	}
	if msg := CheckText(e.BasicAuth.Username); msg != "" {
		add("basicAuth.username", "%s", msg)
	} else if strings.Contains(e.BasicAuth.Username, ":") {
		// RFC 7617: the server splits user and password at the first colon.
		add("basicAuth.username", "must not contain ':': basic auth separates the user name from the password at the first colon")
	}
	if (e.BasicAuth.Username == "") != (e.BasicAuth.PasswordFile == "") {
		add("basicAuth.passwordFile", "basicAuth needs both username and passwordFile")
	}
	if e.BearerTokenFile != "" && e.BasicAuth.Username != "" {
		add("bearerTokenFile", "use either basicAuth or bearerTokenFile, not both")
	}
	if e.CAFile != "" && !strings.HasPrefix(e.URL, "https://") {
		add("caFile", "a CA file needs an https URL")
	}
	if creds := e.BasicAuth.Username != "" || e.BearerTokenFile != ""; creds && strings.HasPrefix(strings.ToLower(e.URL), "http://") && !e.AllowInsecureCredentials {
		add("url", "is plain http, so basicAuth or the bearer token would be sent in the clear: use https, or set %s.allowInsecureCredentials: true to accept that", prefix)
	}
	return out
}

// secretParam matches query parameter names that carry a credential.
// Besides the obvious words: any *key (key, apikey, access_key,
// accesskey), pass and pwd, and code (OAuth's and Azure Functions'
// ?code=).
var secretParam = regexp.MustCompile(`(?i)token|secret|pass|pwd|key|auth|signature|^sig$|credential|session|^code$`)

// CheckURL returns what is wrong with an http(s) URL that is written into
// agent configs and annotations, or "" when nothing is.
func CheckURL(raw string) string {
	if _, err := ParseURL(raw); err != nil {
		return err.Error()
	}
	return ""
}

// ParseURL parses an http(s) URL that is written into agent configs and
// annotations; its error says what is wrong with it (not absolute http(s),
// credentials, a fragment, or characters a template or shell would read) as
// the rest of a sentence that starts with the URL's field.
func ParseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	shown := conffile.Excerpt(Redact(raw))
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "":
		return nil, fmt.Errorf("must be an absolute http(s) URL, got %q", shown)
	case u.User != nil:
		return nil, fmt.Errorf("must not carry credentials (user:password@): they would be written in plain text into configs; use basicAuth.passwordFile or bearerTokenFile, got %q", shown)
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return nil, fmt.Errorf("must not have a #fragment, got %q", shown)
	case strings.ContainsAny(raw, "{}\"'` \\<>|^") || strings.IndexFunc(raw, unicode.IsControl) >= 0 || !utf8.ValidString(raw):
		return nil, fmt.Errorf("must not contain spaces, quotes, braces or control characters (percent-encode them), got %q", shown)
	}
	for name := range u.Query() {
		if secretParam.MatchString(name) {
			return nil, fmt.Errorf("must not carry a secret in its query string (%q): it would be written into configs and logs; put it in a file the agents read (bearerTokenFile or basicAuth.passwordFile, or a lokiSecret), or in a header your gateway takes", conffile.Excerpt(name))
		}
	}
	return u, nil
}

// tenantID is the grammar of Loki (and Mimir) tenant IDs: at most 150
// bytes of letters, digits and !-_.*'(), not "." or "..".
var tenantID = regexp.MustCompile(`^[A-Za-z0-9!\-_.*'()]{1,150}$`)

// CheckTenant returns what is wrong with a tenant (X-Scope-OrgID), or ""
// for a valid one or none.
func CheckTenant(s string) string {
	if s == "" {
		return ""
	}
	if !tenantID.MatchString(s) || s == "." || s == ".." {
		return fmt.Sprintf("must be a Loki tenant ID: at most 150 letters, digits or !-_.*'(), not \".\" or \"..\", got %q", conffile.Excerpt(s))
	}
	return ""
}

// MaxText bounds free-text values (names, tenants, label values, paths).
const MaxText = 253

// CheckText returns what is wrong with a free-text value written into
// configs and headers, or "" when nothing is.
func CheckText(s string) string {
	switch {
	case !utf8.ValidString(s):
		return "must be valid UTF-8 text"
	case strings.IndexFunc(s, unicode.IsControl) >= 0:
		return fmt.Sprintf("must not contain control characters (newlines, tabs, NUL), got %q", conffile.Excerpt(s))
	case len(s) > MaxText:
		return fmt.Sprintf("must be at most %d bytes, got %d", MaxText, len(s))
	}
	return ""
}

// Redact hides the password of a URL that carries one, for messages.
func Redact(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		return u.Redacted()
	}
	if i := strings.Index(raw, "@"); i >= 0 {
		return "…" + raw[i:]
	}
	return raw
}

// labelName is the grammar of Prometheus and Loki label names.
var labelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// IsLabelName reports whether s is a Prometheus and Loki label name.
func IsLabelName(s string) bool { return labelName.MatchString(s) }
