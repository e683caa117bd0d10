package subscribe

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/winobs/winobs/internal/testkit/fixture"
)

// fakeLog is an event log channel in memory: records numbered from first,
// bookmarks "rec:N", with failures to inject.
type fakeLog struct {
	mu        sync.Mutex
	first     int // oldest record still in the log
	last      int // newest record
	maxBatch  int // Next(n) with n above this fails with ErrInvalidBound
	failAfter map[int]error
	subs      int
	// onWait runs once, at the first Wait: the subscription is in place,
	// so what it appends is news to a Future subscription whatever the
	// machine's speed.
	onWait func()
}

func (l *fakeLog) Subscribe(channel, query, bookmark string, start Start) (Subscription, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.subs++
	s := &fakeSub{log: l}
	switch start {
	case AfterBookmark:
		n, _ := strconv.Atoi(strings.TrimPrefix(bookmark, "rec:"))
		if n < l.first {
			return nil, ErrBookmarkNotFound
		}
		s.pos = n + 1
	case Oldest:
		s.pos = l.first
	case Future:
		s.pos = l.last + 1
	}
	return s, nil
}

func (l *fakeLog) Newest(string, string) (string, bool, error) {
	return fmt.Sprintf("rec:%d", l.last), l.last >= l.first, nil
}

func (l *fakeLog) append(n int) {
	l.mu.Lock()
	l.last += n
	l.mu.Unlock()
}

type fakeSub struct {
	log *fakeLog
	pos int
}

func (s *fakeSub) Wait(time.Duration) error {
	s.log.mu.Lock()
	f := s.log.onWait
	s.log.onWait = nil
	s.log.mu.Unlock()
	if f != nil {
		f()
	}
	time.Sleep(time.Millisecond)
	return nil
}
func (s *fakeSub) Close() error { return nil }

func (s *fakeSub) Next(n int) ([]Event, error) {
	l := s.log
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.maxBatch > 0 && n > l.maxBatch {
		return nil, ErrInvalidBound
	}
	if s.pos < l.first {
		return nil, errors.New("query result stale")
	}
	var out []Event
	for len(out) < n && s.pos <= l.last {
		if err, ok := l.failAfter[s.pos]; ok {
			delete(l.failAfter, s.pos)
			return out, err
		}
		out = append(out, Event{XML: []byte(fmt.Sprintf("<Event>%d</Event>", s.pos)), Bookmark: fmt.Sprintf("rec:%d", s.pos)})
		s.pos++
	}
	if len(out) == 0 {
		return nil, ErrNoMoreItems
	}
	return out, nil
}

// collect runs the loop until want events arrived.
func collect(t *testing.T, l *fakeLog, bookmark string, start Start, want int, hooks Hooks) []int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), fixture.Patience)
	defer cancel()
	var got []int
	err := Run(ctx, l, "System", "*", bookmark, start, Options{Batch: 8, Poll: time.Millisecond, MinBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond},
		hooks, func(e Event) error {
			n, _ := strconv.Atoi(strings.TrimPrefix(e.Bookmark, "rec:"))
			got = append(got, n)
			if len(got) == want {
				cancel()
			}
			return nil
		})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v after %d events", err, len(got))
	}
	return got
}

func seq(from, to int) []int {
	var s []int
	for i := from; i <= to; i++ {
		s = append(s, i)
	}
	return s
}

func TestReadsInOrderAndFollows(t *testing.T) {
	l := &fakeLog{first: 1, last: 20}
	go func() { time.Sleep(20 * time.Millisecond); l.append(5) }()
	if got := collect(t, l, "", Oldest, 25, Hooks{}); !slices.Equal(got, seq(1, 25)) {
		t.Errorf("got %v", got)
	}
}

func TestResumesAfterBookmark(t *testing.T) {
	l := &fakeLog{first: 1, last: 20}
	if got := collect(t, l, "rec:15", Oldest, 5, Hooks{}); !slices.Equal(got, seq(16, 20)) {
		t.Errorf("got %v", got)
	}
}

// The bookmarked record was overwritten: restart at the oldest, loudly.
func TestBookmarkGoneRestartsAtOldest(t *testing.T) {
	l := &fakeLog{first: 50, last: 60}
	restarted := 0
	got := collect(t, l, "rec:10", Oldest, 11, Hooks{Restarted: func() { restarted++ }})
	if !slices.Equal(got, seq(50, 60)) || restarted != 1 {
		t.Errorf("got %v, restarted %d", got, restarted)
	}
}

// RPC_S_INVALID_BOUND: the batch halves until it fits; nothing lost or repeated.
func TestInvalidBoundHalvesTheBatch(t *testing.T) {
	l := &fakeLog{first: 1, last: 30, maxBatch: 3}
	resubs := 0
	got := collect(t, l, "", Oldest, 30, Hooks{Resubscribe: func(error) { resubs++ }})
	if !slices.Equal(got, seq(1, 30)) || resubs != 2 {
		t.Errorf("got %v, resubscribes %d (8 -> 4 -> 2)", got, resubs)
	}
}

// Any error mid-stream (stale result, channel gone, RPC failure): resubscribe
// from the last event delivered, with no gap and no repeat.
func TestErrorsResubscribeFromLastDelivered(t *testing.T) {
	l := &fakeLog{first: 1, last: 40, failAfter: map[int]error{
		5: errors.New("ERROR_EVT_QUERY_RESULT_STALE"), 6: errors.New("RPC server unavailable"), 33: errors.New("channel not found"),
	}}
	var errs []string
	got := collect(t, l, "", Oldest, 40, Hooks{Resubscribe: func(err error) { errs = append(errs, err.Error()) }})
	if !slices.Equal(got, seq(1, 40)) {
		t.Errorf("got %v", got)
	}
	if len(errs) != 3 || l.subs != 4 {
		t.Errorf("resubscribed for %v, %d subscriptions", errs, l.subs)
	}
}

func TestFutureStartsAtTheEnd(t *testing.T) {
	l := &fakeLog{first: 1, last: 10}
	l.onWait = func() { l.append(3) }
	if got := collect(t, l, "", Future, 3, Hooks{}); !slices.Equal(got, seq(11, 13)) {
		t.Errorf("got %v", got)
	}
}
