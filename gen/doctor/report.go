package doctor

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/winobs/winobs/conffile"
)

var marks = map[Status]string{Pass: "✓", Fail: "✗", Skip: "-"}

// WriteText prints the checklist: each check with its mark, its evidence
// and, when it failed, the fix. Every echoed text is escaped.
func (r Report) WriteText(w io.Writer) error {
	head := "winobs doctor: Prometheus " + r.Prometheus
	if r.Loki != "" {
		head += ", Loki " + r.Loki
	}
	if _, err := fmt.Fprintln(w, conffile.Printable(head)); err != nil {
		return err
	}
	n := map[Status]int{}
	for _, c := range r.Checks {
		n[c.Status]++
		fmt.Fprintf(w, "%s %s: %s\n", marks[c.Status], c.ID, c.Title)
		for _, e := range c.Evidence {
			fmt.Fprintf(w, "    %s\n", conffile.Printable(e))
		}
		if c.Fix != "" && c.Status != Pass {
			fmt.Fprintf(w, "    fix: %s\n", conffile.Printable(c.Fix))
		}
	}
	_, err := fmt.Fprintf(w, "%d checks: %d passed, %d failed, %d skipped\n", len(r.Checks), n[Pass], n[Fail], n[Skip])
	return err
}

// WriteJSON prints the report as one JSON document, for CI.
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Report
		OK bool `json:"ok"`
	}{r, r.OK()})
}
