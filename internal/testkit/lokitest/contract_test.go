package lokitest

import (
	"testing"

	"github.com/winobs/winobs/contract"
	"github.com/winobs/winobs/shipper/shipconfig"
)

// The Loki model's limits come from Loki's measured behaviour, on purpose
// apart from the limits winobs's code keeps (package contract): this holds
// the two to each other, so a wrong number in either shows here, and the
// shipper's default line limit to Loki's.
func TestModelLimitsAreTheContracts(t *testing.T) {
	l := Default()
	for name, pair := range map[string][2]int{
		"max_label_names_per_series": {l.MaxLabelNames, contract.LokiMaxLabelNames},
		"max_label_name_length":      {l.MaxLabelNameBytes, contract.LokiMaxLabelNameBytes},
		"max_label_value_length":     {l.MaxLabelValueBytes, contract.LokiMaxLabelValueBytes},
		"max_line_size":              {l.MaxLineBytes, contract.LokiMaxLineBytes},
	} {
		if pair[0] != pair[1] {
			t.Errorf("%s: the Loki model has %d, package contract %d", name, pair[0], pair[1])
		}
	}
	sc, err := shipconfig.Default()
	if err != nil {
		t.Fatal(err)
	}
	if sc.Limits.MaxLineBytes != contract.LokiMaxLineBytes {
		t.Errorf("the shipper's default limits.maxLineBytes is %d, Loki's max_line_size %d", sc.Limits.MaxLineBytes, contract.LokiMaxLineBytes)
	}
}
