package endpoint

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// pki is a CA that signs a server certificate (127.0.0.1 and
// api.example.test) and, from a second CA, a client certificate.
type pki struct {
	serverCA, clientCA, clientCert, clientKey, otherCert, otherKey string
	server                                                         tls.Certificate
	clientPool                                                     *x509.CertPool
}

func newPKI(t *testing.T) pki {
	t.Helper()
	dir := t.TempDir()
	write := func(name, kind string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	serial := int64(1)
	issue := func(cn string, ca *x509.Certificate, caKey *ecdsa.PrivateKey, isCA bool, usage x509.ExtKeyUsage) (*x509.Certificate, *ecdsa.PrivateKey, []byte) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		serial++
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: isCA}
		if !isCA {
			tmpl.ExtKeyUsage = []x509.ExtKeyUsage{usage}
			tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
			tmpl.DNSNames = []string{"api.example.test"}
		}
		if ca == nil {
			ca, caKey = tmpl, key
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		cert, _ := x509.ParseCertificate(der)
		return cert, key, der
	}
	keyDER := func(k *ecdsa.PrivateKey) []byte {
		b, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var p pki
	sCA, sCAKey, sCADER := issue("server CA", nil, nil, true, 0)
	p.serverCA = write("server-ca.pem", "CERTIFICATE", sCADER)
	_, sKey, sDER := issue("api", sCA, sCAKey, false, x509.ExtKeyUsageServerAuth)
	srv, err := tls.X509KeyPair(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: sDER}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER(sKey)}))
	if err != nil {
		t.Fatal(err)
	}
	p.server = srv
	cCA, cCAKey, cCADER := issue("client CA", nil, nil, true, 0)
	p.clientCA = write("client-ca.pem", "CERTIFICATE", cCADER)
	p.clientPool = x509.NewCertPool()
	p.clientPool.AddCert(cCA)
	_, cKey, cDER := issue("winobs-doctor", cCA, cCAKey, false, x509.ExtKeyUsageClientAuth)
	p.clientCert, p.clientKey = write("client.pem", "CERTIFICATE", cDER), write("client-key.pem", "EC PRIVATE KEY", keyDER(cKey))
	// A client certificate of a CA the server does not trust.
	_, oKey, oDER := issue("stranger", sCA, sCAKey, false, x509.ExtKeyUsageClientAuth)
	p.otherCert, p.otherKey = write("other.pem", "CERTIFICATE", oDER), write("other-key.pem", "EC PRIVATE KEY", keyDER(oKey))
	return p
}

// A real TLS server that asks for a client certificate of its client CA:
// the one client verifies the server against the CA file, presents the
// certificate when told to, is refused without it or with a stranger's,
// and fails on a server it cannot verify.
func TestHTTPClientAgainstATLSServerWithAClientCA(t *testing.T) {
	p := newPKI(t)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.TLS.PeerCertificates[0].Subject.CommonName)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{p.server}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: p.clientPool}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes are the point
	srv.StartTLS()
	defer srv.Close()
	for _, tc := range []struct {
		name string
		tls  TLS
		want string // the body, or a word of the error
	}{
		{"its client certificate", TLS{CAFile: p.serverCA, CertFile: p.clientCert, KeyFile: p.clientKey}, "winobs-doctor"},
		{"no client certificate", TLS{CAFile: p.serverCA}, "certificate required"},
		// Not of a CA the server asks for: Go's client does not send it.
		{"a certificate of another CA", TLS{CAFile: p.serverCA, CertFile: p.otherCert, KeyFile: p.otherKey}, "certificate required"},
		{"the system roots, not the server's CA", TLS{CertFile: p.clientCert, KeyFile: p.clientKey}, "certificate signed by unknown authority"},
	} {
		c, err := NewHTTPClient(tc.tls, 5*time.Second)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		resp, err := c.Get(srv.URL)
		got := ""
		if err != nil {
			got = err.Error()
		} else {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			got = string(b)
		}
		if !strings.Contains(got, tc.want) {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
	// Files that cannot be a certificate are refused when the client is
	// built, naming the file.
	dir := t.TempDir()
	for _, tc := range []struct {
		tls  TLS
		want string
	}{
		{TLS{CertFile: p.clientCert}, "both its certificate file and its key file"},
		{TLS{CAFile: dir}, "CA file " + dir},
		{TLS{CAFile: p.clientKey}, "holds no PEM certificate"},
		{TLS{CertFile: p.clientCert, KeyFile: p.otherKey}, "client certificate " + p.clientCert},
	} {
		if _, err := NewHTTPClient(tc.tls, time.Second); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.tls, err, tc.want)
		}
	}
}

// The client goes through the proxy the environment names, TLS verified
// end to end through the tunnel, honours NO_PROXY, and never follows a
// redirect. net/http reads the proxy variables once per process, so each
// environment runs in a child process of this test binary.
func TestHTTPClientProxyAndRedirects(t *testing.T) {
	if ca := os.Getenv("WINOBS_TEST_PROXY_CA"); ca != "" {
		proxyChild(t, ca)
		return
	}
	p := newPKI(t)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/moved" {
			http.Redirect(w, r, "http://elsewhere.example/", http.StatusTemporaryRedirect)
			return
		}
		io.WriteString(w, "through "+r.Host)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{p.server}}
	srv.StartTLS()
	defer srv.Close()
	var tunnels atomic.Int32
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect || r.Host != "api.example.test:443" {
			http.Error(w, "not a CONNECT to api.example.test:443: "+r.Method+" "+r.Host, http.StatusBadRequest)
			return
		}
		tunnels.Add(1)
		upstream, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		w.WriteHeader(http.StatusOK)
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			upstream.Close()
			return
		}
		go func() { io.Copy(upstream, buf); upstream.Close() }()
		io.Copy(conn, upstream)
		conn.Close()
	}))
	defer proxy.Close()
	for _, tc := range []struct {
		noProxy string
		tunnels int32
	}{{"", 1}, {"api.example.test", 0}} { // the redirect's request reuses the tunnel
		before := tunnels.Load()
		cmd := exec.Command(os.Args[0], "-test.run=^TestHTTPClientProxyAndRedirects$", "-test.count=1")
		cmd.Env = append(os.Environ(), "WINOBS_TEST_PROXY_CA="+p.serverCA, "HTTPS_PROXY="+proxy.URL, "NO_PROXY="+tc.noProxy, "WINOBS_TEST_NO_PROXY="+tc.noProxy)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("NO_PROXY=%q: %v\n%s", tc.noProxy, err, out)
		}
		if got := tunnels.Load() - before; got != tc.tunnels {
			t.Errorf("NO_PROXY=%q: %d tunnels through the proxy, want %d", tc.noProxy, got, tc.tunnels)
		}
	}
}

// proxyChild is the child's side: a request and a redirect through the
// proxy, or, with NO_PROXY naming the host, a direct attempt that cannot
// resolve it.
func proxyChild(t *testing.T, ca string) {
	c, err := NewHTTPClient(TLS{CAFile: ca}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Get("https://api.example.test/")
	if os.Getenv("WINOBS_TEST_NO_PROXY") != "" {
		if err == nil {
			resp.Body.Close()
			t.Fatal("with NO_PROXY naming the host, the request still reached it")
		}
		return
	}
	if err != nil {
		t.Fatalf("through the proxy: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "through api.example.test" {
		t.Errorf("got %q", b)
	}
	resp, err = c.Get("https://api.example.test/moved")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTemporaryRedirect || resp.Header.Get("Location") != "http://elsewhere.example/" {
		t.Errorf("a redirect: %d %s, want it returned, not followed", resp.StatusCode, resp.Header.Get("Location"))
	}
}

// Credentials are read from their files at each request: a rotated token
// is sent on the next one.
func TestCredentialsReadEachRequest(t *testing.T) {
	token := filepath.Join(t.TempDir(), "token")
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { seen = append(seen, r.Header.Get("Authorization")) }))
	defer srv.Close()
	c := Credentials{BearerTokenFile: token}
	for _, tok := range []string{"first\n", "second"} {
		os.WriteFile(token, []byte(tok), 0o600)
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		if err := c.Authorize(req); err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if strings.Join(seen, ",") != "Bearer first,Bearer second" {
		t.Errorf("sent %q", seen)
	}
	if err := (Credentials{Username: "u", PasswordFile: t.TempDir()}).Authorize(&http.Request{Header: http.Header{}}); err == nil || !strings.Contains(err.Error(), "password file") {
		t.Errorf("a directory as the password file: %v", err)
	}
}

// Issue 58: an answer's headers are bounded at 64 KiB (was net/http's 10
// MiB: one 9 MB header took doctor to 58 MB, the shipper near its 128 MiB
// limit); Loki's and Prometheus' are a few hundred bytes.
func TestHTTPClientBoundsResponseHeaders(t *testing.T) {
	for _, tc := range []struct {
		header int
		ok     bool
	}{{1 << 10, true}, {9 << 20, false}} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("X-Padding", strings.Repeat("a", tc.header))
			w.Write([]byte("ok"))
		}))
		c, err := NewHTTPClient(TLS{}, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Get(srv.URL)
		if err == nil {
			resp.Body.Close()
		}
		if (err == nil) != tc.ok {
			t.Errorf("a %d-byte header: %v, want ok %v", tc.header, err, tc.ok)
		}
		srv.Close()
	}
}
