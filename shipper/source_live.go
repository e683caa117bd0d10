package shipper

import (
	"context"
	"time"

	"github.com/winobs/winobs/shipper/shipconfig"

	"github.com/winobs/winobs/shipper/state"
	"github.com/winobs/winobs/shipper/subscribe"
)

// liveSource follows an event log channel through package subscribe.
type liveSource struct {
	ch      shipconfig.Channel
	startAt string // shipconfig's startAt, for a channel never shipped
	api     subscribe.API
}

func (ls *liveSource) channel() string { return ls.ch.Name }

func (ls *liveSource) run(ctx context.Context, env sourceEnv) error {
	name := ls.ch.Name
	query := ls.ch.Query
	if query == "" {
		query = "*"
	}
	r, err := env.positions.start(name)
	if err != nil {
		return err
	}
	bookmark, start := r.cp.Bookmark, subscribe.Oldest
	switch {
	case r.onCorrupt == shipconfig.Newest:
		bookmark, start = "", subscribe.Future
	case r.onCorrupt == shipconfig.Oldest:
		bookmark = ""
	case !r.found && ls.startAt == shipconfig.Newest:
		// Take a bookmark at the newest record and save it at once, so events
		// logged while the shipper is down later are not lost either.
		bm, ok, err := ls.api.Newest(name, query)
		if err != nil {
			return err
		}
		if ok {
			bookmark = bm
			if err := env.positions.mark(state.Checkpoint{Channel: name, Bookmark: bm}); err != nil {
				return err
			}
		}
	}
	hooks := subscribe.Hooks{
		Resubscribe: func(err error) {
			env.m.resubscribes.WithLabelValues(name).Inc()
			env.log.Warn("resubscribing", "channel", name, "error", err)
		},
		Restarted: func() {
			env.m.dropped.WithLabelValues(name, "bookmark_lost").Add(0)
			env.log.Error("bookmarked record no longer in the log (cleared or overwritten): reading from the oldest record", "channel", name)
		},
	}
	if n, ok := ls.api.(subscribe.Newest); ok {
		go ls.reportLag(ctx, n, env)
	}
	return subscribe.Run(ctx, ls.api, name, query, bookmark, start, subscribe.Options{}, hooks, func(e subscribe.Event) error {
		r := record{channel: name, xml: e.XML, texts: e.Texts, cp: state.Checkpoint{Channel: name, Bookmark: e.Bookmark}, size: int64(len(e.XML))}
		if e.RenderErr != nil {
			env.m.renderErrors.WithLabelValues(name).Inc()
			env.logs.Warn("render_error", "skipping an event that could not be rendered", "channel", name, "error", e.RenderErr)
			r.xml, r.drop = nil, "render_error"
		}
		return env.emit(ctx, r)
	})
}

// lagInterval is how often the record lag is measured.
var lagInterval = 15 * time.Second

// reportLag sets the record lag: records between the newest in the channel
// and the last delivered. With an XPath filter it counts filtered-out
// records too, so it is an upper bound.
func (ls *liveSource) reportLag(ctx context.Context, api subscribe.Newest, env sourceEnv) {
	t := time.NewTicker(lagInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		newest, err := api.NewestRecord(ls.ch.Name)
		if err != nil {
			continue
		}
		if cp, ok := env.positions.acked(ls.ch.Name); ok && cp.RecordID > 0 && newest >= cp.RecordID {
			env.m.lag.WithLabelValues(ls.ch.Name).Set(float64(newest - cp.RecordID))
		}
	}
}
