package broker

import (
	"slices"
	"strings"
	"testing"

	"github.com/sharebroker/sharebroker/brokerconfig"
	"github.com/sharebroker/sharebroker/configdef"
	"github.com/sharebroker/sharebroker/group"
)

// TestPropertyTable checks the table itself: unique names per scope, every
// default passing its own validation, and every topic property naming a
// broker synonym of the same kind whose default is its default.
func TestPropertyTable(t *testing.T) {
	seen := make(map[string]bool)
	for p := range brokerconfig.Properties() {
		key := p.Name + "/" + map[configdef.Scope]string{configdef.Broker: "broker", configdef.Topic: "topic"}[p.Scope]
		if seen[key] {
			t.Errorf("%s: listed twice", key)
		}
		seen[key] = true
		if p.Doc == "" {
			t.Errorf("%s: no doc", key)
		}
		if configType(p.Kind) == 0 {
			t.Errorf("%s: kind %d has no config type", key, p.Kind)
		}
		switch p.Scope {
		case configdef.Broker:
			if p.Synonym != "" {
				t.Errorf("%s: a broker property has no synonym", key)
			}
			if err := p.Validate(p.Default); err != nil {
				t.Errorf("%s: default fails validation: %v", key, err)
			}
		case configdef.Topic:
			if p.Synonym == "" { // no broker default: its own, as Kafka's errors.deadletterqueue.group.enable
				if p.Default == "" || p.Validate(p.Default) != nil {
					t.Errorf("%s: a topic property without a synonym needs a valid default", key)
				}
				continue
			}
			if p.Default != "" {
				t.Errorf("%s: a topic property takes its default from its synonym", key)
			}
			bp, ok := brokerconfig.Lookup(p.Synonym, configdef.Broker)
			if !ok {
				t.Errorf("%s: synonym %q is not a broker property", key, p.Synonym)
				continue
			}
			if bp.Kind != p.Kind {
				t.Errorf("%s: kind %s, synonym %s has %s", key, p.Kind, bp.Name, bp.Kind)
			}
			if err := p.Validate(bp.Default); err != nil {
				t.Errorf("%s: synonym default %q fails validation: %v", key, bp.Default, err)
			}
		case configdef.Group:
			// Names, defaults and values belong to the group package,
			// which validates them; here only the listing is checked.
			if !slices.ContainsFunc(group.GroupConfigProperties(), func(d configdef.Def) bool { return d.Name == p.Name }) {
				t.Errorf("%s: not a group config of the group package", key)
			}
		default:
			t.Errorf("%s: no scope", key)
		}
	}
}

func TestPropertyValidate(t *testing.T) {
	tests := []struct {
		name, prop, value string
		wantErr           string // substring; empty means valid
	}{
		{"long ok", "retention.ms", "-1", ""},
		{"long below min", "retention.ms", "-2", "outside"},
		{"long not a number", "retention.ms", "1h", "not a whole number"},
		{"int overflow", "max.message.bytes", "2147483648", "not a whole number"},
		{"bool ok", "preallocate", "TRUE", ""},
		{"bool bad", "preallocate", "yes", "not true or false"},
		{"enum ok", "message.timestamp.type", "LogAppendTime", ""},
		{"enum bad", "message.timestamp.type", "Now", "not one of"},
		{"list one", "cleanup.policy", "compact", ""},
		{"list two with spaces", "cleanup.policy", "compact, delete", ""},
		{"list empty", "cleanup.policy", " , ", "empty"},
		{"list bad item", "cleanup.policy", "delete,shred", `"shred" is not one of`},
		{"list repeated item", "cleanup.policy", "delete,delete", "listed twice"},
		{"double ok", "min.cleanable.dirty.ratio", "0.25", ""},
		{"double above max", "min.cleanable.dirty.ratio", "1.5", "outside"},
		{"double NaN", "min.cleanable.dirty.ratio", "NaN", "outside"},
		{"double not a number", "min.cleanable.dirty.ratio", "half", "not a number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, ok := brokerconfig.Lookup(tt.prop, configdef.Topic)
			if !ok {
				t.Fatalf("no topic property %s", tt.prop)
			}
			err := p.Validate(tt.value)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("validate(%q) = %v, want nil", tt.value, err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("validate(%q) = %v, want an error containing %q", tt.value, err, tt.wantErr)
			case err != nil && !strings.Contains(err.Error(), tt.prop):
				t.Fatalf("error %q does not name %s", err, tt.prop)
			}
		})
	}
}
