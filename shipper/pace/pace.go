// Package pace keeps pushes under byte rates: one per Loki stream, below the
// rate at which Loki shards a stream (its dedupe does not reach across
// shards, so a replay after a crash would stay visible), and one for all
// streams, below the tenant's ingestion limit.
package pace

import (
	"context"
	"sync"
	"time"

	"github.com/winobs/winobs/shipper/backoff"
)

// Pacer spaces out sends so that each key, and all keys together, stay at or
// under their rates on average: a send goes when the bytes before it have
// been paid for. A rate of 0 means unlimited.
type Pacer struct {
	mu        sync.Mutex
	perKey    float64 // bytes per second, per key
	total     float64 // bytes per second, all keys
	next      map[string]time.Time
	nextTotal time.Time
	now       func() time.Time
}

// New returns a pacer with the given rates in bytes per second.
func New(perKey, total int) *Pacer {
	return &Pacer{perKey: float64(perKey), total: float64(total), next: map[string]time.Time{}, now: time.Now}
}

// Reserve books bytes per key for one send and returns how long to wait
// before making it.
func (p *Pacer) Reserve(bytes map[string]int) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	wait := time.Duration(0)
	sum := 0
	for key, n := range bytes {
		sum += n
		if p.perKey > 0 {
			t := p.next[key]
			wait = max(wait, book(&t, now, n, p.perKey))
			p.next[key] = t
		}
	}
	if p.total > 0 {
		wait = max(wait, book(&p.nextTotal, now, sum, p.total))
	}
	if len(p.next) > 1024 { // keys long paid for carry no state
		for k, t := range p.next {
			if t.Before(now) {
				delete(p.next, k)
			}
		}
	}
	return wait
}

// book returns the wait until the slot *next, then moves *next past n bytes.
func book(next *time.Time, now time.Time, n int, rate float64) time.Duration {
	start := *next
	if start.Before(now) {
		start = now
	}
	*next = start.Add(time.Duration(float64(n) / rate * float64(time.Second)))
	return start.Sub(now)
}

// Wait reserves and sleeps; it returns ctx's error if ctx ends first.
func (p *Pacer) Wait(ctx context.Context, bytes map[string]int) error {
	if d := p.Reserve(bytes); d > 0 {
		return backoff.Sleep(ctx, d)
	}
	return nil
}
