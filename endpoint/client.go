package endpoint

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/winobs/winobs/conffile"
)

// Credentials say who sends a request: files read at each request, so a
// rotated secret is used on the next one and no secret is ever a value.
type Credentials struct {
	BearerTokenFile string
	Username        string
	PasswordFile    string
}

// TLS is how the server is verified (CAFile, else the system roots) and,
// with CertFile and KeyFile, how the client proves itself to a server that
// asks for a certificate.
type TLS struct {
	CAFile, CertFile, KeyFile string
}

// maxSecret bounds a secret file; maxPEM a certificate or key file.
const (
	maxSecret = 64 << 10
	maxPEM    = 1 << 20
)

// Credentials of the endpoint, as the agents send them.
func (e Loki) Credentials() Credentials {
	return Credentials{BearerTokenFile: e.BearerTokenFile, Username: e.BasicAuth.Username, PasswordFile: e.BasicAuth.PasswordFile}
}

// TLS of the endpoint.
func (e Loki) TLS() TLS { return TLS{CAFile: e.CAFile} }

// NewHTTPClient is the one HTTP client winobs reaches an API with (doctor's
// Prometheus and Loki, the shipper's Loki): TLS 1.2 or later, always
// verified; a client certificate when t names one; the proxy the
// process's environment names (HTTPS_PROXY, HTTP_PROXY, NO_PROXY, read once
// by net/http); never a redirect followed: a redirect could carry the
// credentials elsewhere, to http://, or turn a POST into a body-less GET,
// so the caller sees it and says so. Every file is read bounded and only
// when it is a regular file (conffile.ReadFile).
func NewHTTPClient(t TLS, timeout time.Duration) (*http.Client, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if t.CAFile != "" {
		pem, err := conffile.ReadFile(t.CAFile, maxPEM)
		if err != nil {
			return nil, fmt.Errorf("CA file %s: %w", t.CAFile, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CA file %s holds no PEM certificate", t.CAFile)
		}
		cfg.RootCAs = pool
	}
	if (t.CertFile == "") != (t.KeyFile == "") {
		return nil, fmt.Errorf("a client certificate needs both its certificate file and its key file")
	}
	if t.CertFile != "" {
		certPEM, err := conffile.ReadFile(t.CertFile, maxPEM)
		if err != nil {
			return nil, fmt.Errorf("client certificate file %s: %w", t.CertFile, err)
		}
		keyPEM, err := conffile.ReadFile(t.KeyFile, maxPEM)
		if err != nil {
			return nil, fmt.Errorf("client key file %s: %w", t.KeyFile, err)
		}
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("client certificate %s with key %s: %w", t.CertFile, t.KeyFile, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = cfg
	tr.Proxy = http.ProxyFromEnvironment
	// Loki's and Prometheus' headers are a few hundred bytes; net/http's
	// default (10 MiB) let one 9 MB header take 58 MB of doctor and most of
	// the shipper's 128 MiB with four pushes in flight.
	tr.MaxResponseHeaderBytes = MaxResponseHeaderBytes
	return &http.Client{Transport: tr, Timeout: timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}, nil
}

// MaxResponseHeaderBytes bounds an answer's headers.
const MaxResponseHeaderBytes = 64 << 10

// Authorize sets req's credentials, read from their files now: a bearer
// token (trimmed) or basic auth (the password's line ending trimmed).
func (c Credentials) Authorize(req *http.Request) error {
	switch {
	case c.BearerTokenFile != "":
		b, err := conffile.ReadFile(c.BearerTokenFile, maxSecret)
		if err != nil {
			return fmt.Errorf("bearer token file %s: %w", c.BearerTokenFile, err)
		}
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(b)))
	case c.Username != "":
		b, err := conffile.ReadFile(c.PasswordFile, maxSecret)
		if err != nil {
			return fmt.Errorf("password file %s: %w", c.PasswordFile, err)
		}
		req.SetBasicAuth(c.Username, strings.TrimRight(string(b), "\r\n"))
	}
	return nil
}
