package group

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The checks of a GROUP config value, as Kafka 4.4 makes them in
// GroupConfig.validate (group-config-exact in docs/share-groups.md §5.6):
// first every value is parsed by its type and its own validator
// (ConfigDef.parse, in the order GroupConfig defines the configs), then
// the parsed values are held to the broker's bounds and to each other
// (GroupConfig.validateValues, in its order). The refusal is
// INVALID_CONFIG with Kafka's text, word for word.

// configError is a GROUP config refusal whose text is Kafka's; it is
// ErrInvalidConfig to errors.Is.
type configError string

func (e configError) Error() string { return string(e) }
func (e configError) Unwrap() error { return ErrInvalidConfig }

// invalidValue is ConfigException(name, value, why)'s text: what the
// parse step and a config's own validator say.
func invalidValue(name, value, why string) error {
	return configError(fmt.Sprintf("Invalid value %s for configuration %s: %s", value, name, why))
}

// parseFunc is the parse step of one config: its type, and the validator
// its definition carries (a floor, a list of strings, a format). It sees
// the value as given; Kafka trims a value before parsing it.
type parseFunc func(name, value string) error

// boundsFunc is validateValues' check of one parsed value against the
// broker's configuration.
type boundsFunc func(c *groupBounds, name, value string) error

// parseInt is Kafka's INT with atLeast(floor): "Not a number of type INT",
// then "Value must be at least".
func parseInt(floor int64) parseFunc {
	return func(name, value string) error {
		n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 32)
		if err != nil {
			return invalidValue(name, value, "Not a number of type INT")
		}
		if n < floor {
			return invalidValue(name, strconv.FormatInt(n, 10), fmt.Sprintf("Value must be at least %d", floor))
		}
		return nil
	}
}

// parseBoolean is Kafka's BOOLEAN: true or false in any case.
func parseBoolean(name, value string) error {
	if _, ok := parseBool(value); !ok {
		return invalidValue(name, value, "Expected value to be either true or false")
	}
	return nil
}

// parseOneOf is Kafka's ValidString.in: exactly one of the strings, case
// and all.
func parseOneOf(valid ...string) parseFunc {
	return func(name, value string) error {
		if v := strings.TrimSpace(value); !slices.Contains(valid, v) {
			return invalidValue(name, v, "String must be one of: "+strings.Join(valid, ", "))
		}
		return nil
	}
}

// parseAutoOffsetReset is ShareGroupAutoOffsetResetStrategy.Validator:
// whatever fromString refuses gets one text.
func parseAutoOffsetReset(name, value string) error {
	v := strings.TrimSpace(value)
	if _, err := ParseOffsetReset(v); err != nil {
		return invalidValue(name, v, fmt.Sprintf("Invalid value `%s` for configuration %s. "+
			"The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS.>'.", v, name))
	}
	return nil
}

// parseString is a STRING with no validator of its own.
func parseString(string, string) error { return nil }

// inRange is validateIntRange: the value within the broker's min and max.
func inRange(bounds func(c *groupBounds) (min, max int64)) boundsFunc {
	return func(c *groupBounds, name, value string) error {
		lo, hi := bounds(c)
		if n := parsedInt(value); n < lo || n > hi {
			return configError(fmt.Sprintf("%s must be in the range %d to %d inclusive.", name, lo, hi))
		}
		return nil
	}
}

// atMost is validateIntMax.
func atMost(max int64) boundsFunc {
	return func(_ *groupBounds, name, value string) error {
		if parsedInt(value) > max {
			return configError(fmt.Sprintf("%s must be less than or equal to %d", name, max))
		}
		return nil
	}
}

// parsedInt reads an INT value that passed its parse step.
func parsedInt(value string) int64 {
	n, _ := strconv.ParseInt(strings.TrimSpace(value), 10, 32)
	return n
}

// kafkaDefineOrder is the order in which Kafka 4.4's GroupConfig defines
// the configs this broker knows; ConfigDef.parse checks them in it, so of
// several unparsable values the first here is the one refused.
var kafkaDefineOrder = []string{
	"consumer.session.timeout.ms",
	"consumer.heartbeat.interval.ms",
	"consumer.assignment.interval.ms",
	"consumer.assignor.offload.enable",
	"share.session.timeout.ms",
	"share.heartbeat.interval.ms",
	"share.record.lock.duration.ms",
	"share.delivery.count.limit",
	"share.partition.max.record.locks",
	"share.auto.offset.reset",
	"share.isolation.level",
	"share.renew.acknowledge.enable",
	"share.assignment.interval.ms",
	"share.assignor.offload.enable",
	"streams.session.timeout.ms",
	"streams.heartbeat.interval.ms",
	"streams.num.standby.replicas",
	"streams.initial.rebalance.delay.ms",
	"streams.assignment.interval.ms",
	"streams.assignor.offload.enable",
	"errors.deadletterqueue.topic.name",
	"errors.deadletterqueue.copy.record.enable",
}

// kafkaBoundsOrder is GroupConfig.validateValues' order of its bound
// checks; the session/heartbeat pairs and the dead-letter topic name
// follow them.
var kafkaBoundsOrder = []string{
	"consumer.heartbeat.interval.ms",
	"consumer.session.timeout.ms",
	"consumer.assignment.interval.ms",
	"share.heartbeat.interval.ms",
	"share.session.timeout.ms",
	"share.record.lock.duration.ms",
	"share.delivery.count.limit",
	"share.partition.max.record.locks",
	"share.assignment.interval.ms",
	"streams.heartbeat.interval.ms",
	"streams.session.timeout.ms",
	"streams.num.standby.replicas",
	"streams.assignment.interval.ms",
}

// checkValues is GroupConfig.validate over a group's resulting overrides
// (names were checked before): parse every value, then the bounds, then
// each session timeout above its heartbeat interval, then the dead-letter
// topic's name.
func (s *ConfigStore) checkValues(set map[string]string) error {
	for _, name := range kafkaDefineOrder {
		if v, ok := set[name]; ok {
			d, _ := findGroupConfig(name)
			if err := d.parse(name, v); err != nil {
				return err
			}
		}
	}
	for _, name := range kafkaBoundsOrder {
		if v, ok := set[name]; ok {
			d, _ := findGroupConfig(name)
			if err := d.bounds(&s.broker, name, v); err != nil {
				return err
			}
		}
	}
	for _, p := range sessionHeartbeatPairs {
		if s.intValue(set, p[0]) <= s.intValue(set, p[1]) {
			return configError(fmt.Sprintf("%s must be greater than %s", p[0], p[1]))
		}
	}
	if v, ok := set["errors.deadletterqueue.topic.name"]; ok {
		return checkDLQTopicName(nil, "errors.deadletterqueue.topic.name", v)
	}
	return nil
}
