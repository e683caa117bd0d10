package shipper

import (
	"context"
	"sync"
)

// budget bounds the bytes read but not yet delivered: sources wait when it
// is spent, so a slow or absent Loki holds reading back instead of memory
// growing.
type budget struct {
	mu   sync.Mutex
	cond *sync.Cond
	used int64
	max  int64
}

func newBudget(max int64) *budget {
	b := &budget{max: max}
	b.cond = sync.NewCond(&b.mu)
	return b
}

// acquire waits until n bytes fit (one item larger than the budget is let
// through alone, so it cannot block forever).
func (b *budget) acquire(ctx context.Context, n int64) error {
	stop := context.AfterFunc(ctx, func() {
		b.mu.Lock()
		b.cond.Broadcast()
		b.mu.Unlock()
	})
	defer stop()
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.used > 0 && b.used+n > b.max {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		b.cond.Wait()
	}
	b.used += n
	return nil
}

func (b *budget) release(n int64) {
	b.mu.Lock()
	b.used -= n
	b.cond.Broadcast()
	b.mu.Unlock()
}

func (b *budget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}
