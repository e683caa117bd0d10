//go:build windows

package shipper

import (
	"github.com/winobs/winobs/shipper/eventxml"
	"github.com/winobs/winobs/shipper/shipconfig"
	"github.com/winobs/winobs/shipper/wineventlog"
)

func init() {
	newLiveSource = func(s *Shipper, ch shipconfig.Channel) (source, error) {
		s.lookups = eventxml.Lookups{ProcessName: wineventlog.ProcessName, UserName: wineventlog.UserName}
		return &liveSource{ch: ch, s: s, api: wineventlog.New(uint32(s.cfg.Locale))}, nil
	}
}
