package loki

import (
	"bytes"
	"testing"
	"time"

	"github.com/grafana/loki/pkg/push"
)

// The hand encoder is byte-identical to Loki's own generated code
// (pkg/push, Apache-2.0, linked into this test only).
func TestPushRequestMatchesLokiPush(t *testing.T) {
	cases := map[string][]Stream{
		"empty": nil,
		"events": {
			{Labels: FormatLabels(map[string]string{"job": "windows-events", "class": "node", "computer": "WIN-1", "node": "k8s-lab-win-1"}),
				Entries: []Entry{
					{Time: time.Unix(0, 1377183104205667300), Line: []byte(`{"source":"Service Control Manager","event_id":7036}`),
						Metadata: []Label{{"channel", "System"}}},
					{Time: time.Unix(3, 0), Line: []byte("two pairs, one empty value"), Metadata: []Label{{"channel", "Microsoft-Windows-Hyper-V-Compute-Admin"}, {"x", ""}}},
					{Time: time.Unix(1684766633, 0), Line: []byte("whole second")},
					{Time: time.Unix(0, 0), Line: []byte("epoch")},
					{Time: time.Unix(5, 7), Line: nil},
				}},
			{Labels: `{job="windows-events"}`, Entries: []Entry{{Time: time.Unix(-5, 0), Line: bytes.Repeat([]byte("é"), 300)}}},
		},
	}
	for name, streams := range cases {
		var req push.PushRequest
		for _, s := range streams {
			ps := push.Stream{Labels: s.Labels}
			for _, e := range s.Entries {
				pe := push.Entry{Timestamp: e.Time, Line: string(e.Line)}
				for _, m := range e.Metadata {
					pe.StructuredMetadata = append(pe.StructuredMetadata, push.LabelAdapter{Name: m.Name, Value: m.Value})
				}
				ps.Entries = append(ps.Entries, pe)
			}
			req.Streams = append(req.Streams, ps)
		}
		want, err := req.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendPushRequest(nil, streams); !bytes.Equal(got, want) {
			t.Errorf("%s:\n got  %x\n want %x", name, got, want)
		}
	}
}

func TestFormatLabels(t *testing.T) {
	got := FormatLabels(map[string]string{"node": "k8s-lab-win-1", "channel": "System", "job": `a"b\c`})
	if want := `{channel="System", job="a\"b\\c", node="k8s-lab-win-1"}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
