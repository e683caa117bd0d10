package logqlcheck

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/winobs/winobs/internal/fixture"
)

// EventLineFields is every key LogQL's json parser makes of the golden
// Alloy lines (nested objects joined with _), so a field the queries use
// exists in what the agents write.
func TestEventLineFieldsCoverTheGoldenLines(t *testing.T) {
	seen := map[string]bool{}
	var flatten func(prefix string, v any)
	flatten = func(prefix string, v any) {
		if m, ok := v.(map[string]any); ok {
			for k, child := range m {
				if prefix != "" {
					k = prefix + "_" + k
				}
				flatten(k, child)
			}
			return
		}
		seen[prefix] = true
	}
	for file, line := range fixture.ExpectedLines(t) {
		var v map[string]any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		flatten("", v)
	}
	for k := range seen {
		if !slices.Contains(EventLineFields, k) {
			t.Errorf("the golden lines have %q, which EventLineFields lacks", k)
		}
	}
	if len(seen) < 12 {
		t.Errorf("only %d fields in the golden lines", len(seen))
	}
}
