package group

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sharebroker/sharebroker/configdef"
)

// groupConfigDef is one dynamic GROUP config (resource type 32).
type groupConfigDef struct {
	// Def declares it: name, type and meaning, and the default the
	// reference shows (the broker property it derives from, as Synonym).
	configdef.Def
	// def renders the default, derived from the broker config.
	def func(c *groupBounds) string
	// parse checks the value's type and its own validator; bounds, nil for
	// none, holds the parsed value to the broker config (config_checks.go).
	parse  parseFunc
	bounds boundsFunc
}

func itoa(n int32) string { return strconv.FormatInt(int64(n), 10) }

func msString(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// groupBounds is the broker configuration GROUP configs take their
// defaults and bounds from.
type groupBounds struct {
	ShareConfig
	consumer ConsumerConfig
}

func constDef(v string) func(*groupBounds) string { return func(*groupBounds) string { return v } }

// groupConfigs is every GROUP config name Kafka accepts (share-groups.md
// §5.6). The consumer.* entries take their defaults and bounds from the
// broker's group.consumer.* properties; the streams.* entries use Kafka's
// default broker bounds (group.streams.*), as there are no streams groups.
var groupConfigs = []groupConfigDef{
	// KAFKA-20251's assignment batching and offload configs (Kafka 4.3;
	// config_releases.go). Kafka's group coordinator uses them to delay and
	// to offload computing target assignments; this broker computes an
	// assignment at once, so they are checked, stored and described and
	// change nothing (share-groups.md §5.6, assignment-configs-inert). The
	// bounds are Kafka's defaults of group.*.min/max.assignment.interval.ms.
	assignmentIntervalConfig("consumer"),
	assignorOffloadConfig("consumer"),
	{configdef.Def{Name: "consumer.heartbeat.interval.ms", Scope: configdef.Group, Kind: configdef.Int, Default: "5000",
		Doc: "Accepted and stored for consumer groups (KIP-848)."}, func(c *groupBounds) string { return msString(c.consumer.HeartbeatInterval) },
		parseInt(1), inRange(func(c *groupBounds) (int64, int64) {
			return c.consumer.MinHeartbeatInterval.Milliseconds(), c.consumer.MaxHeartbeatInterval.Milliseconds()
		})},
	{configdef.Def{Name: "consumer.session.timeout.ms", Scope: configdef.Group, Kind: configdef.Int, Default: "45000",
		Doc: "Accepted and stored for consumer groups (KIP-848)."}, func(c *groupBounds) string { return msString(c.consumer.SessionTimeout) },
		parseInt(1), inRange(func(c *groupBounds) (int64, int64) {
			return c.consumer.MinSessionTimeout.Milliseconds(), c.consumer.MaxSessionTimeout.Milliseconds()
		})},
	{configdef.Def{Name: "errors.deadletterqueue.copy.record.enable", Scope: configdef.Group, Kind: configdef.Bool, Default: "false",
		Doc: "Whether a dead-letter record carries the source record's key, value and headers, or the context headers alone."}, constDef("false"), parseBoolean, nil},
	{configdef.Def{Name: "errors.deadletterqueue.topic.name", Scope: configdef.Group, Kind: configdef.String, Default: "",
		Doc: "The share group's dead-letter topic (KIP-1191); blank for none. A name starting with `__` is refused (share-groups.md §10)."}, constDef(""), parseString, nil},
	assignmentIntervalConfig("share"), // KAFKA-20251, as above
	assignorOffloadConfig("share"),
	{configdef.Def{Name: "share.auto.offset.reset", Scope: configdef.Group, Kind: configdef.String, Default: "latest",
		Doc: "Where a share partition starts when the group first reads it: latest, earliest, or by_duration:<ISO-8601 duration>, in lower case."}, constDef("latest"),
		parseAutoOffsetReset, nil},
	{configdef.Def{Name: "share.delivery.count.limit", Scope: configdef.Group, Kind: configdef.Int, Synonym: "group.share.delivery.count.limit",
		Doc: "Delivery attempts after which a released or expired record is archived (Kafka 4.3)."}, func(c *groupBounds) string { return itoa(c.DeliveryCountLimit) },
		parseInt(2), inRange(func(c *groupBounds) (int64, int64) {
			return int64(c.MinDeliveryCountLimit), int64(c.MaxDeliveryCountLimit)
		})},
	{configdef.Def{Name: "share.heartbeat.interval.ms", Scope: configdef.Group, Kind: configdef.Int, Synonym: "group.share.heartbeat.interval.ms",
		Doc: "Heartbeat interval the members are told."}, func(c *groupBounds) string { return itoa(c.HeartbeatIntervalMs) },
		parseInt(1), inRange(func(c *groupBounds) (int64, int64) {
			return int64(c.MinHeartbeatIntervalMs), int64(c.MaxHeartbeatIntervalMs)
		})},
	{configdef.Def{Name: "share.isolation.level", Scope: configdef.Group, Kind: configdef.String, Default: "read_uncommitted",
		Doc: "read_committed stops acquisition at the last stable offset and never delivers aborted records."}, constDef("read_uncommitted"),
		parseOneOf("read_committed", "read_uncommitted"), nil},
	{configdef.Def{Name: "share.partition.max.record.locks", Scope: configdef.Group, Kind: configdef.Int, Synonym: "group.share.partition.max.record.locks",
		Doc: "Most in-flight records per share partition (Kafka 4.3)."}, func(c *groupBounds) string { return itoa(c.PartitionMaxRecordLocks) },
		parseInt(100), inRange(func(c *groupBounds) (int64, int64) {
			return int64(c.MinPartitionMaxRecordLocks), int64(c.MaxPartitionMaxRecordLocks)
		})},
	{configdef.Def{Name: "share.record.lock.duration.ms", Scope: configdef.Group, Kind: configdef.Int, Synonym: "group.share.record.lock.duration.ms",
		Doc: "How long an acquired record stays locked to its member; AcquisitionLockTimeoutMs reports it."}, func(c *groupBounds) string { return itoa(c.RecordLockDurationMs) },
		parseInt(1000), inRange(func(c *groupBounds) (int64, int64) {
			return int64(c.MinRecordLockDurationMs), int64(c.MaxRecordLockDurationMs)
		})},
	{configdef.Def{Name: "share.renew.acknowledge.enable", Scope: configdef.Group, Kind: configdef.Bool, Default: "true",
		Doc: "Whether members may RENEW acquisition locks (KIP-1222); false refuses RENEW with INVALID_RECORD_STATE."}, constDef("true"), parseBoolean, nil},
	{configdef.Def{Name: "share.session.timeout.ms", Scope: configdef.Group, Kind: configdef.Int, Synonym: "group.share.session.timeout.ms",
		Doc: "A member not heard from for this long is fenced; must exceed the heartbeat interval."}, func(c *groupBounds) string { return itoa(c.SessionTimeoutMs) },
		parseInt(1), inRange(func(c *groupBounds) (int64, int64) { return int64(c.MinSessionTimeoutMs), int64(c.MaxSessionTimeoutMs) })},
	assignmentIntervalConfig("streams"), // KAFKA-20251, as above
	assignorOffloadConfig("streams"),
	// The streams bounds are Kafka's defaults of group.streams.min/max.*.
	{configdef.Def{Name: "streams.heartbeat.interval.ms", Scope: configdef.Group, Kind: configdef.Int, Default: "5000",
		Doc: "Accepted and stored; streams groups are not served."}, constDef("5000"),
		parseInt(1), inRange(func(*groupBounds) (int64, int64) { return 5000, 15000 })},
	{configdef.Def{Name: "streams.initial.rebalance.delay.ms", Scope: configdef.Group, Kind: configdef.Int, Default: "3000",
		Doc: "Accepted and stored; streams groups are not served."}, constDef("3000"), parseInt(0), nil},
	{configdef.Def{Name: "streams.num.standby.replicas", Scope: configdef.Group, Kind: configdef.Int, Default: "0",
		Doc: "Accepted and stored; streams groups are not served."}, constDef("0"),
		parseInt(0), atMost(2)}, // group.streams.max.standby.replicas
	{configdef.Def{Name: "streams.session.timeout.ms", Scope: configdef.Group, Kind: configdef.Int, Default: "45000",
		Doc: "Accepted and stored; streams groups are not served."}, constDef("45000"),
		parseInt(1), inRange(func(*groupBounds) (int64, int64) { return 45000, 60000 })},
}

// sessionHeartbeatPairs are the configs where the session timeout must
// exceed the heartbeat interval.
var sessionHeartbeatPairs = [][2]string{
	{"consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"},
	{"share.session.timeout.ms", "share.heartbeat.interval.ms"},
	{"streams.session.timeout.ms", "streams.heartbeat.interval.ms"},
}

func findGroupConfig(name string) (groupConfigDef, bool) {
	for _, d := range groupConfigs {
		if d.Name == name {
			return d, true
		}
	}
	return groupConfigDef{}, false
}

// GroupConfigProperties declares every GROUP config, sorted by name, for
// the broker's property table (DescribeConfigs, the README's reference).
func GroupConfigProperties() []configdef.Def {
	out := make([]configdef.Def, len(groupConfigs))
	for i, d := range groupConfigs {
		out[i] = d.Def
	}
	return out
}

// parseBool parses a Kafka BOOLEAN: true or false in any case, spaces
// trimmed.
func parseBool(s string) (value, ok bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

// ConfigOp is one change of IncrementalAlterConfigs: SET Name to Value, or
// DELETE Name (back to its default). APPEND and SUBTRACT make no sense for
// scalar configs; the broker answers them with INVALID_CONFIG itself.
type ConfigOp struct {
	Name   string
	Value  string
	Delete bool
}

// ConfigEntry is one config as DescribeConfigs shows it.
type ConfigEntry struct {
	Name  string
	Value string
	// IsDefault: no group override; the value is the broker-derived
	// default (source DEFAULT_CONFIG, else GROUP_CONFIG).
	IsDefault bool
}

// ConfigStore holds the GROUP config overrides of every group ID, whether or
// not a group by that ID exists. It is safe for concurrent use.
type ConfigStore struct {
	broker groupBounds // immutable after construction
	// release is the Kafka release the broker is, "" for the newest; set
	// before use (config_releases.go).
	release string

	mu        sync.Mutex                   // guards overrides
	overrides map[string]map[string]string // group ID -> name -> value
	// journal, nil without a data directory, is told every change
	// (journal.go); set before the store is used.
	journal ConfigJournal
}

// NewConfigStore returns an empty store whose defaults and bounds come from
// broker, which should have passed Validate; consumer groups get Kafka's
// defaults.
func NewConfigStore(broker ShareConfig) *ConfigStore {
	return NewGroupConfigStore(broker, DefaultConsumerConfig())
}

// NewGroupConfigStore is NewConfigStore with the consumer group
// configuration too.
func NewGroupConfigStore(share ShareConfig, consumer ConsumerConfig) *ConfigStore {
	return &ConfigStore{broker: groupBounds{ShareConfig: share, consumer: consumer}, overrides: make(map[string]map[string]string)}
}

// Replace sets groupID's overrides to exactly values (the legacy
// AlterConfigs semantics), validated as Alter does.
func (s *ConfigStore) Replace(groupID string, values map[string]string, validateOnly bool) error {
	if groupID == "" {
		return fmt.Errorf("%w: group config resource name must not be empty", ErrInvalidRequest)
	}
	next := make(map[string]string, len(values))
	for k, v := range values {
		if _, ok := s.knownConfig(k); !ok {
			return configError("Unknown group config name: " + k)
		}
		next[k] = v
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.commitLocked(groupID, next, validateOnly)
}

func (s *ConfigStore) commitLocked(groupID string, next map[string]string, validateOnly bool) error {
	if err := s.validate(next); err != nil {
		return err
	}
	if validateOnly {
		return nil
	}
	_, had := s.overrides[groupID]
	if len(next) == 0 {
		delete(s.overrides, groupID)
	} else {
		s.overrides[groupID] = next
	}
	if s.journal != nil && (had || len(next) > 0) {
		s.journal(groupID, next)
	}
	return nil
}

// validate checks a resulting override set (config_checks.go).
func (s *ConfigStore) validate(set map[string]string) error { return s.checkValues(set) }

// intValue reads an INT config from set or its default; set holds only
// validated values.
func (s *ConfigStore) intValue(set map[string]string, name string) int64 {
	v, ok := set[name]
	if !ok {
		d, _ := findGroupConfig(name)
		v = d.def(&s.broker)
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
	return n
}

// Describe returns every GROUP config for groupID, sorted by name.
func (s *ConfigStore) Describe(groupID string) []ConfigEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	set := s.overrides[groupID]
	out := make([]ConfigEntry, 0, len(groupConfigs))
	for _, d := range groupConfigs {
		if !releaseHas(s.release, d.Name) {
			continue
		}
		if v, ok := set[d.Name]; ok {
			out = append(out, ConfigEntry{Name: d.Name, Value: v})
		} else {
			out = append(out, ConfigEntry{Name: d.Name, Value: d.def(&s.broker), IsDefault: true})
		}
	}
	slices.SortFunc(out, func(a, b ConfigEntry) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Share resolves groupID's effective share-group config. Stored values are
// clamped into the broker bounds on use rather than trusted, as Kafka does
// for values that a later bounds change left outside (KIP-1240).
func (s *ConfigStore) Share(groupID string) ShareGroupConfig {
	s.mu.Lock()
	set := s.overrides[groupID]
	// An override the release lacks (kept in a data directory a newer
	// release wrote) is not applied: that release has no such config
	// (group-config-release).
	get := func(name string) (string, bool) { v, ok := set[name]; return v, ok && releaseHas(s.release, name) }
	b := &s.broker
	intOr := func(name string, def, lo, hi int32) int32 {
		v, ok := get(name)
		if !ok {
			return def
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		if err != nil {
			return def
		}
		return min(hi, max(lo, int32(n)))
	}
	cfg := ShareGroupConfig{
		RecordLockDuration:      ms(intOr("share.record.lock.duration.ms", b.RecordLockDurationMs, b.MinRecordLockDurationMs, b.MaxRecordLockDurationMs)),
		SessionTimeout:          ms(intOr("share.session.timeout.ms", b.SessionTimeoutMs, b.MinSessionTimeoutMs, b.MaxSessionTimeoutMs)),
		HeartbeatInterval:       ms(intOr("share.heartbeat.interval.ms", b.HeartbeatIntervalMs, b.MinHeartbeatIntervalMs, b.MaxHeartbeatIntervalMs)),
		DeliveryCountLimit:      intOr("share.delivery.count.limit", b.DeliveryCountLimit, b.MinDeliveryCountLimit, b.MaxDeliveryCountLimit),
		PartitionMaxRecordLocks: intOr("share.partition.max.record.locks", b.PartitionMaxRecordLocks, b.MinPartitionMaxRecordLocks, b.MaxPartitionMaxRecordLocks),
		RenewAcknowledgeEnable:  true,
	}
	if v, ok := get("share.auto.offset.reset"); ok {
		cfg.AutoOffsetReset, _ = ParseOffsetReset(strings.TrimSpace(v))
	}
	if v, ok := get("share.isolation.level"); ok && strings.TrimSpace(v) == "read_committed" {
		cfg.IsolationLevel = ReadCommitted
	}
	cfg.DeadLetter = deadLetterConfig(get)
	if v, ok := get("share.renew.acknowledge.enable"); ok {
		if b, ok := parseBool(v); ok {
			cfg.RenewAcknowledgeEnable = b
		}
	}
	s.mu.Unlock()
	return cfg
}

func ms(n int32) time.Duration { return time.Duration(n) * time.Millisecond }
