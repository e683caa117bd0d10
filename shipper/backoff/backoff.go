// Package backoff is the jittered exponential backoff the shipper's retry
// loops share.
package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Policy doubles from Min to Max.
type Policy struct{ Min, Max time.Duration }

// Delay is the wait before retry number attempt (0-based): between half and
// all of Min·2^attempt, capped at Max.
func (p Policy) Delay(attempt int) time.Duration {
	d := p.Min << min(attempt, 30)
	if d <= 0 || d > p.Max {
		d = p.Max
	}
	return d/2 + rand.N(d/2+1)
}

// Sleep waits d or until ctx ends.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
