package group

import (
	"slices"
	"testing"
)

// group-config-exact: every GROUP config is parsed in Kafka's define order
// and every one with broker bounds is held to them in validateValues'
// order, so a config added to the table without its place in either is
// never checked; this catches that.
func TestGroupConfigCheckOrders(t *testing.T) {
	for _, d := range groupConfigs {
		if !slices.Contains(kafkaDefineOrder, d.Name) {
			t.Errorf("%s is not in kafkaDefineOrder", d.Name)
		}
		if d.parse == nil {
			t.Errorf("%s has no parse step", d.Name)
		}
		if (d.bounds != nil) != slices.Contains(kafkaBoundsOrder, d.Name) {
			t.Errorf("%s: bounds %v but in kafkaBoundsOrder %v", d.Name, d.bounds != nil, slices.Contains(kafkaBoundsOrder, d.Name))
		}
	}
	if len(kafkaDefineOrder) != len(groupConfigs) {
		t.Errorf("kafkaDefineOrder names %d configs, the table has %d", len(kafkaDefineOrder), len(groupConfigs))
	}
}
