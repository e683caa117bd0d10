// Package subscribe reads one event log channel through a pull subscription
// and survives what the event log does to subscriptions: a bookmarked record
// that was cleared or overwritten, a query result gone stale after a
// rollover, RPC bounds errors on large batches, a channel that disappears.
// The Windows calls sit behind API (package wineventlog implements it), so
// all of this is tested on any OS.
package subscribe

import (
	"context"
	"errors"
	"time"

	"github.com/winobs/winobs/shipper/backoff"
	"github.com/winobs/winobs/shipper/eventxml"
)

// Start says where a subscription begins.
type Start int

const (
	// AfterBookmark resumes strictly after the bookmark: if its record is
	// gone, Subscribe fails with ErrBookmarkNotFound instead of guessing.
	AfterBookmark Start = iota
	// Oldest reads the whole channel.
	Oldest
	// Future reads only events logged from now on.
	Future
)

// Errors an API reports for the conditions the loop handles specially.
var (
	// ErrNoMoreItems: nothing to read until the signal fires again.
	ErrNoMoreItems = errors.New("no more items")
	// ErrInvalidBound: the batch was too large for the RPC layer
	// (RPC_S_INVALID_BOUND); the subscription position is lost.
	ErrInvalidBound = errors.New("batch too large for RPC")
	// ErrBookmarkNotFound: the bookmarked record no longer exists.
	ErrBookmarkNotFound = errors.New("bookmarked record not found")
)

// Event is one rendered event and the bookmark just past it.
type Event struct {
	XML      []byte
	Texts    *eventxml.Texts // nil when the publisher's texts are unavailable
	Bookmark string
	// RenderErr is set when the event could not be rendered; the bookmark
	// still moves past it, and the caller counts the reason.
	RenderErr error
}

// API is the part of wevtapi the loop needs.
type API interface {
	// Subscribe opens a pull subscription.
	Subscribe(channel, query, bookmark string, start Start) (Subscription, error)
	// Newest returns a bookmark at the newest matching record; ok is false
	// for an empty channel.
	Newest(channel, query string) (bookmark string, ok bool, err error)
}

// Newest reports the number of the newest record in a channel; APIs that can
// implement it, and the caller uses it for the record lag.
type Newest interface {
	NewestRecord(channel string) (uint64, error)
}

// Subscription is an open pull subscription.
type Subscription interface {
	// Wait blocks until events may be available or the timeout passes.
	Wait(timeout time.Duration) error
	// Next returns up to n events, or ErrNoMoreItems.
	Next(n int) ([]Event, error)
	Close() error
}

// Hooks report what happened, for metrics and logs.
type Hooks struct {
	Resubscribe func(err error)
	// Restarted reports a bookmark whose record is gone: reading restarts at
	// the oldest record (Loki drops what it already has).
	Restarted func()
}

// Options tune the loop.
type Options struct {
	Batch      int           // events per Next; halved on ErrInvalidBound
	Poll       time.Duration // longest wait for the signal
	MinBackoff time.Duration
	MaxBackoff time.Duration
}

func (o *Options) defaults() {
	if o.Batch <= 0 {
		o.Batch = 100
	}
	if o.Poll <= 0 {
		o.Poll = time.Second
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = time.Second
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = time.Minute
	}
}

// Run reads channel from bookmark (or from start when bookmark is empty)
// and hands each event to deliver, in order, until ctx ends. Every error
// closes the subscription and opens a new one from the last event delivered,
// after a backoff; one failing channel never stalls another (each has its
// own Run).
func Run(ctx context.Context, api API, channel, query, bookmark string, start Start,
	opts Options, hooks Hooks, deliver func(Event) error) error {
	opts.defaults()
	batch := opts.Batch
	failures := 0
	for ctx.Err() == nil {
		mode := start
		if bookmark != "" {
			mode = AfterBookmark
		}
		sub, err := api.Subscribe(channel, query, bookmark, mode)
		if errors.Is(err, ErrBookmarkNotFound) {
			// Cleared or overwritten: everything still in the log is newer.
			if hooks.Restarted != nil {
				hooks.Restarted()
			}
			bookmark, start = "", Oldest
			continue
		}
		if err == nil {
			var last string
			last, err = drain(ctx, sub, &batch, opts.Poll, deliver, &failures)
			if last != "" {
				bookmark = last
			}
			sub.Close()
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, ErrInvalidBound) {
			batch = max(batch/2, 1)
		}
		if hooks.Resubscribe != nil {
			hooks.Resubscribe(err)
		}
		if err := backoff.Sleep(ctx, (backoff.Policy{Min: opts.MinBackoff, Max: opts.MaxBackoff}).Delay(failures)); err != nil {
			return err
		}
		failures++
	}
	return ctx.Err()
}

// drain reads a subscription until an error; it returns the bookmark of the
// last event delivered.
func drain(ctx context.Context, sub Subscription, batch *int, poll time.Duration,
	deliver func(Event) error, failures *int) (string, error) {
	var last string
	for ctx.Err() == nil {
		events, err := sub.Next(*batch)
		for _, e := range events {
			if derr := deliver(e); derr != nil {
				return last, derr
			}
			last = e.Bookmark
			*failures = 0
		}
		switch {
		case errors.Is(err, ErrNoMoreItems) || err == nil && len(events) == 0:
			if werr := sub.Wait(poll); werr != nil {
				return last, werr
			}
		case err != nil:
			return last, err
		}
	}
	return last, ctx.Err()
}
