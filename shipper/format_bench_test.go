package shipper

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/winobs/winobs/eventfilter"
	"github.com/winobs/winobs/gen/config"
	"github.com/winobs/winobs/internal/testkit/fixture"
	"github.com/winobs/winobs/shipper/eventxml"
	"github.com/winobs/winobs/shipper/loki"
	"github.com/winobs/winobs/shipper/shipconfig"
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

// BenchmarkDumpQuery: the security set's query on a busy node's Security
// mix (securityMix), read from a dump. prepare: one op is one event parsed,
// tested and, when kept, formatted (forwarded_% the share kept); match:
// one op is the query's test alone on a parsed event.
func BenchmarkDumpQuery(b *testing.B) {
	q, err := eventfilter.Compile("Security", []eventfilter.Filter{{Events: config.SecurityEvents}})
	if err != nil {
		b.Fatal(err)
	}
	mix := securityMix(b)
	b.Run("prepare", func(b *testing.B) {
		f := testFormatter(b, func(c *shipconfig.Config) {
			c.Dumps = []shipconfig.Dump{{Path: "x", Channel: "Security", Query: q}}
		})
		kept, n := 0, 0
		b.ReportAllocs()
		for b.Loop() {
			raw := mix[n%len(mix)]
			if f.prepare(record{channel: "Security", xml: raw, size: int64(len(raw))}).ok {
				kept++
			}
			n++
		}
		b.ReportMetric(100*float64(kept)/float64(n), "forwarded_%")
	})
	b.Run("match", func(b *testing.B) {
		parsed, err := eventfilter.Parse(q)
		if err != nil {
			b.Fatal(err)
		}
		var fields []eventfilter.Fields
		for _, raw := range mix {
			e, _ := eventxml.Parse(raw)
			fields = append(fields, e.FilterFields())
		}
		n := 0
		for b.Loop() {
			parsed.Match(fields[n%len(fields)])
			n++
		}
	})
}

// securityMix is an hour of a busy node's Security log, 1,000 events in
// its proportions: 4624 logons 30%, 4634 logoffs 30%, 4672 special
// privileges 15%, 5156 filtering-platform connections 20%, 4688 process
// creation 4%, and the rest 1%: failed logons 4625 (6), an account change
// 4738 (1), a member added to a group 4732 (1), a lockout 4740 (1), a
// service installed 4697 (1). Built from testdata/events by changing ids.
func securityMix(b *testing.B) [][]byte {
	read := func(name string) string { return string(fixture.Read(b, fixture.Events, name)) }
	logon, failed := read("security-4624-logon.xml"), read("security-4625-failed-logon.xml")
	as := func(xml string, id int) []byte {
		return []byte(strings.Replace(xml, "<EventID>"+xml[strings.Index(xml, "<EventID>")+9:strings.Index(xml, "</EventID>")]+"</EventID>", fmt.Sprintf("<EventID>%d</EventID>", id), 1))
	}
	var mix [][]byte
	for _, part := range []struct {
		xml   []byte
		count int
	}{
		{as(logon, 4624), 300}, {as(logon, 4634), 300}, {as(logon, 4672), 150}, {as(logon, 5156), 200}, {as(logon, 4688), 40},
		{[]byte(failed), 6}, {[]byte(read("security-4738-account-changed.xml")), 1}, {[]byte(read("security-4732-member-added-users.xml")), 1},
		{[]byte(read("security-4740-lockout.xml")), 1}, {[]byte(read("security-4697-service-installed.xml")), 1},
	} {
		for range part.count {
			mix = append(mix, part.xml)
		}
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(mix), func(i, j int) { mix[i], mix[j] = mix[j], mix[i] })
	return mix
}
