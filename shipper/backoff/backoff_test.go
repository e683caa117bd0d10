package backoff

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestDelayBounds(t *testing.T) {
	p := Policy{Min: 500 * time.Millisecond, Max: 5 * time.Minute}
	for attempt, want := range map[int]time.Duration{0: 500 * time.Millisecond, 3: 4 * time.Second, 40: 5 * time.Minute} {
		for range 100 {
			if d := p.Delay(attempt); d < want/2 || d > want {
				t.Fatalf("attempt %d: %v outside [%v, %v]", attempt, d, want/2, want)
			}
		}
	}
}

func TestSleepStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v", err)
	}
}
