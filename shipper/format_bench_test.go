package shipper

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/winobs/winobs/shipper/shipconfig"

	"github.com/winobs/winobs/internal/fixture"
	"github.com/winobs/winobs/shipper/loki"
)

// BenchmarkFormatBatchEncode: one op is one event formatted into a batch;
// every 1000 events the batch is encoded as a push body, as the shipper does.
// allocs/op is allocations per event.
func BenchmarkFormatBatchEncode(b *testing.B) {
	raw := fixture.Read(b, fixture.EventLog, "scm-7036-appxsvc-renderinginfo.xml")
	dir := b.TempDir()
	p := filepath.Join(dir, "c.yaml")
	os.WriteFile(p, []byte("loki: {url: http://127.0.0.1:1/loki/api/v1/push}\ndumps: [{path: x, channel: System}]\nstateDir: "+dir+"\n"), 0o644)
	cfg, err := shipconfig.Load(p)
	if err != nil {
		b.Fatal(err)
	}
	s, err := New(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	bt := newBatch()
	n := 0
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		s.format.add(bt, record{channel: "System", xml: raw, size: int64(len(raw))})
		if n++; n == 1000 {
			_ = loki.Body(bt.streams)
			bt, n = newBatch(), 0
		}
	}
}
