package shipper

import (
	"testing"

	"github.com/winobs/winobs/internal/fixture"
	"github.com/winobs/winobs/shipper/loki"
)

// BenchmarkFormatBatchEncode: one op is one event formatted into a batch;
// every 1000 events the batch is encoded as a push body, as the shipper does.
// allocs/op is allocations per event.
func BenchmarkFormatBatchEncode(b *testing.B) {
	raw := fixture.Read(b, fixture.EventLog, "scm-7036-appxsvc-renderinginfo.xml")
	f := testFormatter(b, nil)
	bt := newBatch()
	n := 0
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		f.add(bt, record{channel: "System", xml: raw, size: int64(len(raw))})
		if n++; n == 1000 {
			_ = loki.Body(bt.streams)
			bt, n = newBatch(), 0
		}
	}
}
