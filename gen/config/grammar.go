package config

import (
	"fmt"
	"math"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/distribution/reference"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/winobs/winobs/conffile"
	"github.com/winobs/winobs/contract"
	"github.com/winobs/winobs/endpoint"
)

// Every config string that reaches another language is checked here against
// that language's grammar; values that are escaped by construction (YAML, the
// Alloy builder's strings, PromQL/LogQL label values) still must be valid
// UTF-8 text without control characters, so what a user reads in the config
// is what the artifact carries.

// text checks a value that is escaped wherever it lands.
func (v *validator) text(path, s string) bool {
	if msg := endpoint.CheckText(s); msg != "" {
		v.add(path, "%s", reason(msg))
		return false
	}
	return true
}

// services checks Windows service key names, as the SCM registers them
// (they reach the exporter's include regex and the Loki rules' event match).
func (v *validator) services(path string, names []string) {
	for i, s := range names {
		v.check(fmt.Sprintf("%s[%d]", path, i), serviceName.MatchString(s),
			"must be a Windows service key name (letters, digits, '_', '.', '-'), got %q", s)
	}
}

// labels checks a Kubernetes label map with apimachinery's rules (what the
// API server enforces on metadata.labels and selectors).
func (v *validator) labels(path string, m map[string]string) {
	for k, val := range m {
		p := conffile.KeyPath(path, k)
		for _, msg := range validation.IsQualifiedName(k) {
			v.add(p, "invalid Kubernetes label key %q: %s", k, reason(msg))
		}
		for _, msg := range validation.IsValidLabelValue(val) {
			v.add(p, "invalid Kubernetes label value %q: %s", val, reason(msg))
		}
	}
}

// labelKey checks a Kubernetes label or annotation key.
func (v *validator) labelKey(path, k string) {
	for _, msg := range validation.IsQualifiedName(k) {
		v.add(path, "invalid Kubernetes label key %q: %s", k, reason(msg))
	}
}

// labelValue checks a Kubernetes label value.
func (v *validator) labelValue(path, s string) {
	for _, msg := range validation.IsValidLabelValue(s) {
		v.add(path, "invalid Kubernetes label value %q: %s", s, reason(msg))
	}
}

// image checks a container image reference (name[:tag][@sha256:digest]) as
// the container runtime parses it.
func (v *validator) image(path, ref string) {
	if _, err := reference.ParseNormalizedNamed(ref); err != nil {
		v.add(path, "must be an image reference such as registry/name:tag or registry/name@sha256:<digest>, got %q: %v", ref, err)
	}
}

// clusterLabel checks the label that separates clusters: a Prometheus and
// Loki label name that no rule, stream or scrape already uses.
func (v *validator) clusterLabel(path, s string) {
	switch {
	case !endpoint.IsLabelName(s):
		v.add(path, "must be a label name ([a-zA-Z_][a-zA-Z0-9_]*), got %q", s)
	case strings.HasPrefix(s, "__") || strings.HasPrefix(s, "exported_") || slices.Contains(contract.ReservedLabels, s):
		v.add(path, "%q is a label winobs's rules, streams or scrapes already use (reserved: __*, exported_*, job, instance, node, namespace, pod, container, channel, computer, ...): choose another, such as cluster", s)
	}
}

// WindowsPathPattern is a drive-letter path whose characters need no
// quoting on a Windows command line or in a config file (no quotes, %, ^, &,
// |, <, >); the windowsPath check also refuses . and .. segments and device
// names. The node's own steps match it again before they touch a path.
const WindowsPathPattern = `^[A-Za-z]:(\\[A-Za-z0-9_.\-]+)+\\?$`

var safeWindowsPath = regexp.MustCompile(WindowsPathPattern)

func (v *validator) windowsPath(path, s string) {
	ok := safeWindowsPath.MatchString(s) && len(s) <= endpoint.MaxText
	for i, seg := range strings.Split(s, `\`) {
		ok = ok && seg != ".." && seg != "."
		if ok && i > 0 && seg != "" && !v.windowsName(path, s, seg, "use another directory name") {
			return
		}
	}
	v.check(path, ok, `must be an absolute Windows path on the node's disk made of letters, digits, '_', '.' and '-' (such as C:\var\lib\winobs), got %q`, s)
}

// secretFile is a path to a secret on the node, read by the agents.
func (v *validator) secretFile(path, s string) {
	if s != "" {
		v.windowsPath(path, s)
	}
}

// httpURL checks an http(s) URL that is written into agent configs and
// annotations (endpoint.CheckURL).
func (v *validator) httpURL(path, raw string) {
	if msg := endpoint.CheckURL(raw); msg != "" {
		v.add(path, "%s", reason(msg))
	}
}

// scraperAddress checks an allowFrom entry: an IP address or CIDR without an
// IPv6 zone, which the firewall step receives as data in canonical form.
func (v *validator) scraperAddress(path, s string) {
	if p, err := netip.ParsePrefix(s); err == nil && p.Addr().Zone() == "" {
		return
	}
	if a, err := netip.ParseAddr(s); err == nil && a.Zone() == "" {
		return
	}
	v.add(path, "must be an IP address or CIDR such as 192.168.10.23/32 (no IPv6 zone), got %q", s)
}

// CanonicalAddress returns an allowFrom entry in canonical form (netip's
// String): what gen renders, never the text as written.
func CanonicalAddress(s string) string {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked().String()
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return a.String()
	}
	return ""
}

// durationIn checks a Prometheus duration within [lo, hi].
func (v *validator) durationIn(path string, d Duration, lo, hi model.Duration, why string) {
	m, ok := v.duration(path, d)
	if ok && (m < lo || m > hi) {
		v.add(path, "must be between %s and %s (%s), got %s", lo, hi, why, string(d))
	}
}

// finiteIn checks a float threshold within (lo, hi].
func (v *validator) finiteIn(path string, f, lo, hi float64, what string) {
	v.check(path, !math.IsNaN(f) && !math.IsInf(f, 0) && f > lo && f <= hi,
		"must be %s above %g and at most %g, got %g", what, lo, hi, f)
}

// ComponentLabel is the label of a channel's Alloy component and bookmark
// file: the channel name lower-cased, with every character outside [a-z0-9]
// replaced by '_', and a leading '_' when it would not start with a letter,
// so it is always an Alloy identifier. Distinct channels can collide ("éé"
// and "èè"); Validate reports that.
func (c Channel) ComponentLabel() string {
	var b strings.Builder
	for i, r := range strings.ToLower(c.Name) {
		switch {
		case r >= 'a' && r <= 'z':
		case r >= '0' && r <= '9':
			if i == 0 {
				b.WriteByte('_')
			}
		default:
			r = '_'
		}
		b.WriteRune(r)
	}
	if b.Len() == 0 {
		return "_"
	}
	return b.String()
}

// APIServerURL reads an API server given as a URL, as consoles show it (EKS:
// https://<id>.gr7.<region>.eks.amazonaws.com): its host and its port
// (443 when the URL names none). isURL is false for a bare host, which the
// caller keeps as it is. A URL with a path, credentials or another scheme
// is an error: the API server is reached at its root over https.
func APIServerURL(raw string) (host string, port int, isURL bool, err error) {
	if !strings.Contains(raw, "://") {
		return raw, 0, false, nil
	}
	u, perr := url.Parse(raw)
	switch {
	case perr != nil || u.Host == "":
		return "", 0, true, fmt.Errorf("%q is not a URL", conffile.Excerpt(raw))
	case u.Scheme != "https":
		return "", 0, true, fmt.Errorf("%q: the API server is reached over https", conffile.Excerpt(raw))
	case u.User != nil || strings.Trim(u.Path, "/") != "" || u.RawQuery != "" || u.Fragment != "":
		return "", 0, true, fmt.Errorf("%q: give the API server's address alone (scheme, host and port)", conffile.Excerpt(raw))
	}
	port = 443
	if p := u.Port(); p != "" {
		if port, err = strconv.Atoi(p); err != nil || port < 1 || port > 65535 {
			return "", 0, true, fmt.Errorf("%q: the port must be 1 to 65535", conffile.Excerpt(raw))
		}
	}
	return u.Hostname(), port, true, nil
}
