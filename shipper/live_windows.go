//go:build windows

package shipper

import (
	"github.com/winobs/winobs/shipper/eventxml"
	"github.com/winobs/winobs/shipper/shipconfig"
	"github.com/winobs/winobs/shipper/wineventlog"
)

func init() {
	newLiveSource = func(cfg *shipconfig.Config, ch shipconfig.Channel) (source, eventxml.Lookups, error) {
		return &liveSource{ch: ch, startAt: cfg.StartAt, api: wineventlog.New(uint32(cfg.Locale))},
			eventxml.Lookups{ProcessName: wineventlog.ProcessName, UserName: wineventlog.UserName}, nil
	}
}
