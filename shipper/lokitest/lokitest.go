// Package lokitest is a Loki-protocol receiver for tests, on 127.0.0.1, that
// stores entries with Loki's semantics where delivery guarantees depend on
// them, and injects the failures a shipper must survive.
package lokitest

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/golang/snappy"
	"google.golang.org/protobuf/encoding/protowire"
)

// Fault is what the receiver does with one request.
type Fault int

const (
	// Accept stores the entries and answers 204.
	Accept Fault = iota
	// RateLimited answers 429, storing nothing.
	RateLimited
	// Unavailable answers 503, storing nothing.
	Unavailable
	// InternalError answers 500, storing nothing.
	InternalError
	// Blocked answers 260 (ingestion blocked): a 2xx that stores nothing.
	Blocked
	// Reset closes the connection without an answer, storing nothing.
	Reset
	// StoreThenReset stores the entries, then closes the connection: the
	// client cannot know they arrived.
	StoreThenReset
	// Slow waits SlowFor, then accepts.
	Slow
)

// Behaviour is how the receiver answers. Set may change it while requests
// are being served.
type Behaviour struct {
	// Decide picks the fault for request n (from 0); nil accepts all. It is
	// called from the server's goroutines.
	Decide func(n int) Fault
	// RejectBefore makes entries older than it a partial 400, as Loki's
	// reject_old_samples does.
	RejectBefore time.Time
	// SlowFor is the delay of Slow.
	SlowFor time.Duration
}

// Receiver counts what a Loki would hold.
type Receiver struct {
	mu       sync.Mutex
	behave   Behaviour
	requests int
	// stored: stream -> line -> distinct timestamps stored. Loki drops an
	// entry identical in stream, timestamp and line to one it has.
	stored   map[string]map[string]map[int64]bool
	received int
	srv      *http.Server
	ln       net.Listener
	addr     string
}

// New starts a receiver on a free loopback port.
func New() (*Receiver, error) {
	r := &Receiver{stored: map[string]map[string]map[int64]bool{}}
	return r, r.Start()
}

// Set replaces the receiver's behaviour for the requests that follow.
func (r *Receiver) Set(b Behaviour) {
	r.mu.Lock()
	r.behave = b
	r.mu.Unlock()
}

// URL is the push URL.
func (r *Receiver) URL() string { return "http://" + r.addr + "/loki/api/v1/push" }

// Start listens (again, on the same port after Stop).
func (r *Receiver) Start() error {
	addr := r.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	var ln net.Listener
	var err error
	for range 50 { // the old socket may linger briefly after Stop
		if ln, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.ln, r.addr = ln, ln.Addr().String()
	r.srv = &http.Server{Handler: r}
	srv := r.srv
	r.mu.Unlock()
	go srv.Serve(ln)
	return nil
}

// Stop closes the listener and every connection: the receiver is down.
func (r *Receiver) Stop() {
	r.mu.Lock()
	srv := r.srv
	r.mu.Unlock()
	if srv != nil {
		srv.Close()
	}
}

// Stats is what the receiver holds.
type Stats struct {
	Requests int
	Received int // entries in accepted requests, repeats included
	Distinct int // distinct lines stored
	// Duplicates are lines stored more than once, under different
	// timestamps: the repeats Loki's dedupe cannot remove.
	Duplicates int
}

// Stats returns the counts so far.
func (r *Receiver) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := Stats{Requests: r.requests, Received: r.received}
	for _, lines := range r.stored {
		for _, ts := range lines {
			s.Distinct++
			if len(ts) > 1 {
				s.Duplicates++
			}
		}
	}
	return s
}

// Has reports whether line is stored in any stream.
func (r *Receiver) Has(line string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, lines := range r.stored {
		if lines[line] != nil {
			return true
		}
	}
	return false
}

type entry struct {
	ts   int64
	line string
}

func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	raw, err := io.ReadAll(req.Body)
	if err != nil {
		return
	}
	r.mu.Lock()
	n, b := r.requests, r.behave
	r.requests++
	r.mu.Unlock()
	fault := Accept
	if b.Decide != nil {
		fault = b.Decide(n)
	}
	switch fault {
	case RateLimited:
		http.Error(w, "Ingestion rate limit exceeded", http.StatusTooManyRequests)
		return
	case Unavailable:
		http.Error(w, "ingester unavailable", http.StatusServiceUnavailable)
		return
	case InternalError:
		http.Error(w, "rpc error", http.StatusInternalServerError)
		return
	case Blocked:
		w.WriteHeader(260)
		return
	case Reset:
		reset(w)
		return
	case Slow:
		time.Sleep(b.SlowFor)
	}
	streams, err := decode(raw)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var rejected []string
	r.mu.Lock()
	for labels, entries := range streams {
		for _, e := range entries {
			if !b.RejectBefore.IsZero() && e.ts < b.RejectBefore.UnixNano() {
				rejected = append(rejected, fmt.Sprintf("entry for stream '%s' has timestamp too old: %s, oldest acceptable timestamp is: %s",
					labels, time.Unix(0, e.ts).UTC().Format("2006-01-02 15:04:05.999999999 -0700 MST"), b.RejectBefore.UTC().Format("2006-01-02 15:04:05.999999999 -0700 MST")))
				continue
			}
			r.received++
			if r.stored[labels] == nil {
				r.stored[labels] = map[string]map[int64]bool{}
			}
			if r.stored[labels][e.line] == nil {
				r.stored[labels][e.line] = map[int64]bool{}
			}
			r.stored[labels][e.line][e.ts] = true
		}
	}
	r.mu.Unlock()
	switch {
	case fault == StoreThenReset:
		reset(w)
	case len(rejected) > 0:
		http.Error(w, strings.Join(rejected, "\n"), http.StatusBadRequest)
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

func reset(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if c, _, err := hj.Hijack(); err == nil {
			if tc, ok := c.(*net.TCPConn); ok {
				tc.SetLinger(0) // RST, not FIN
			}
			c.Close()
		}
	}
}

// decode reads a snappy-compressed logproto PushRequest.
func decode(raw []byte) (map[string][]entry, error) {
	b, err := snappy.Decode(nil, raw)
	if err != nil {
		return nil, err
	}
	out := map[string][]entry{}
	err = fields(b, func(num protowire.Number, v []byte) error {
		if num != 1 {
			return nil
		}
		var labels string
		var entries []entry
		err := fields(v, func(num protowire.Number, v []byte) error {
			switch num {
			case 1:
				labels = string(v)
			case 2:
				var e entry
				err := fields(v, func(num protowire.Number, v []byte) error {
					switch num {
					case 1:
						var sec, ns int64
						err := varints(v, func(num protowire.Number, x uint64) {
							if num == 1 {
								sec = int64(x)
							} else if num == 2 {
								ns = int64(x)
							}
						})
						e.ts = sec*1e9 + ns
						return err
					case 2:
						e.line = string(v)
					}
					return nil
				})
				entries = append(entries, e)
				return err
			}
			return nil
		})
		out[labels] = append(out[labels], entries...)
		return err
	})
	return out, err
}

// fields calls fn for each length-delimited field of a message.
func fields(b []byte, fn func(protowire.Number, []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if typ != protowire.BytesType {
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return protowire.ParseError(n)
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		if err := fn(num, v); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// varints calls fn for each varint field of a message.
func varints(b []byte, fn func(protowire.Number, uint64)) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if typ != protowire.VarintType {
			n = protowire.ConsumeFieldValue(num, typ, b)
		} else {
			var x uint64
			x, n = protowire.ConsumeVarint(b)
			if n >= 0 {
				fn(num, x)
			}
		}
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
	}
	return nil
}
