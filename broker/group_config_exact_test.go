package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/broker"
)

// Rule: group-config-exact (docs/share-groups.md §5.6): a GROUP config value
// is checked as Kafka 4.4's GroupConfig.validate checks it, and refused
// with INVALID_CONFIG and Kafka's text. Each case below failed before the
// rule: an upper-case keyword accepted, a value Kafka trims refused, or
// another text. Kafka: ShareGroupAutoOffsetResetStrategy.fromString and its
// Validator, ConfigDef.parseType (INT, BOOLEAN, STRING trimmed),
// Range.atLeast, ValidString.in, GroupConfig.validateValues
// (GroupConfigTest.testValidationErrorMessageIncludesBound).
func TestGroupConfigExact(t *testing.T) {
	// Bounds that let a session timeout fall to a heartbeat interval.
	_, addr := startBroker(t, broker.Config{Props: map[string]string{"group.share.min.session.timeout.ms": "10000"}})
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	// alter sets the configs on group g through IncrementalAlterConfigs
	// and returns the resource's answer.
	alter := func(g string, kv ...string) (int16, string) {
		t.Helper()
		var ops []configOp
		for i := 0; i < len(kv); i += 2 {
			ops = append(ops, configOp{kmsg.IncrementalAlterConfigOpSet, kv[i], kv[i+1]})
		}
		return incrementalAlter(t, cl, kmsg.ConfigResourceTypeGroupConfig, g, ops...)
	}

	const resetHelp = "The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS.>'."
	refused := []struct {
		name string
		kv   []string
		want string
	}{
		{"unknown name", []string{"share.max.size", "10"},
			"Unknown group config name: share.max.size"}, // GroupConfig.validateNames
		{"offset reset in upper case", []string{"share.auto.offset.reset", "EARLIEST"},
			"Invalid value EARLIEST for configuration share.auto.offset.reset: Invalid value `EARLIEST` for configuration share.auto.offset.reset. " + resetHelp},
		{"by_duration in upper case", []string{"share.auto.offset.reset", "BY_DURATION:PT1H"},
			"Invalid value BY_DURATION:PT1H for configuration share.auto.offset.reset: Invalid value `BY_DURATION:PT1H` for configuration share.auto.offset.reset. " + resetHelp},
		{"by_duration without a duration", []string{"share.auto.offset.reset", "by_duration"},
			"Invalid value by_duration for configuration share.auto.offset.reset: Invalid value `by_duration` for configuration share.auto.offset.reset. " + resetHelp},
		{"negative duration", []string{"share.auto.offset.reset", "by_duration:-PT10S"},
			"Invalid value by_duration:-PT10S for configuration share.auto.offset.reset: Invalid value `by_duration:-PT10S` for configuration share.auto.offset.reset. " + resetHelp},
		{"isolation level in upper case", []string{"share.isolation.level", "READ_COMMITTED"},
			"Invalid value READ_COMMITTED for configuration share.isolation.level: String must be one of: read_committed, read_uncommitted"},
		{"not an INT", []string{"share.record.lock.duration.ms", "1e4"},
			"Invalid value 1e4 for configuration share.record.lock.duration.ms: Not a number of type INT"},
		{"below the config's own floor", []string{"share.delivery.count.limit", "1"},
			"Invalid value 1 for configuration share.delivery.count.limit: Value must be at least 2"},
		{"not a BOOLEAN", []string{"share.renew.acknowledge.enable", "yes"},
			"Invalid value yes for configuration share.renew.acknowledge.enable: Expected value to be either true or false"},
		{"below the broker's minimum", []string{"share.record.lock.duration.ms", "10000"},
			"share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive."},
		{"above the broker's maximum", []string{"share.session.timeout.ms", "70000"},
			"share.session.timeout.ms must be in the range 10000 to 60000 inclusive."},
		{"consumer heartbeat out of range", []string{"consumer.heartbeat.interval.ms", "1"},
			"consumer.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive."},
		{"streams standby above its maximum", []string{"streams.num.standby.replicas", "5"},
			"streams.num.standby.replicas must be less than or equal to 2"},
		{"session not above heartbeat", []string{"share.heartbeat.interval.ms", "12000", "share.session.timeout.ms", "12000"},
			"share.session.timeout.ms must be greater than share.heartbeat.interval.ms"},
		{"dead-letter topic name of an internal topic", []string{"errors.deadletterqueue.topic.name", " __x"},
			"errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'"},
		{"parse errors before bounds, in Kafka's define order", []string{"share.session.timeout.ms", "1", "share.isolation.level", "x", "consumer.session.timeout.ms", "z"},
			"Invalid value z for configuration consumer.session.timeout.ms: Not a number of type INT"},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			code, msg := alter("exact", tc.kv...)
			if code != kerr.InvalidConfig.Code || msg != tc.want {
				t.Fatalf("got %v %q\nwant INVALID_CONFIG %q", kerr.ErrorForCode(code), msg, tc.want)
			}
		})
	}

	// What Kafka accepts: its STRING, INT and BOOLEAN values are trimmed
	// before they are checked, BOOLEAN takes any case, and a duration's
	// letters may be in either case (java.time.Duration.parse).
	for _, kv := range [][]string{
		{"share.auto.offset.reset", " earliest "},
		{"share.auto.offset.reset", "by_duration:pt1h"},
		{"share.isolation.level", " read_committed"},
		{"share.record.lock.duration.ms", " 20000 "},
		{"share.renew.acknowledge.enable", "FALSE"},
	} {
		if code, msg := alter("exact", kv...); code != 0 {
			t.Errorf("%s=%q: %v %q, want accepted", kv[0], kv[1], kerr.ErrorForCode(code), msg)
		}
	}
}
