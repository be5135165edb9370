package group

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/sharebroker/sharebroker/configdef"
)

// ShareConfig is the broker-level group.share.* configuration. Kafka reads
// these statically from server.properties; the broker fills this struct from
// flags or a config file through ShareBrokerProperties, then calls Validate.
// Values are Kafka INTs, hence int32.
type ShareConfig struct {
	RecordLockDurationMs    int32 // group.share.record.lock.duration.ms
	MinRecordLockDurationMs int32 // group.share.min.record.lock.duration.ms
	MaxRecordLockDurationMs int32 // group.share.max.record.lock.duration.ms

	DeliveryCountLimit    int32 // group.share.delivery.count.limit
	MinDeliveryCountLimit int32 // group.share.min.delivery.count.limit [4.3]
	MaxDeliveryCountLimit int32 // group.share.max.delivery.count.limit [4.3]

	PartitionMaxRecordLocks    int32 // group.share.partition.max.record.locks
	MinPartitionMaxRecordLocks int32 // group.share.min.partition.max.record.locks [4.3]
	MaxPartitionMaxRecordLocks int32 // group.share.max.partition.max.record.locks [4.3]

	MaxShareSessions int32 // group.share.max.share.sessions
	MaxSize          int32 // group.share.max.size

	SessionTimeoutMs    int32 // group.share.session.timeout.ms
	MinSessionTimeoutMs int32 // group.share.min.session.timeout.ms
	MaxSessionTimeoutMs int32 // group.share.max.session.timeout.ms

	HeartbeatIntervalMs    int32 // group.share.heartbeat.interval.ms
	MinHeartbeatIntervalMs int32 // group.share.min.heartbeat.interval.ms
	MaxHeartbeatIntervalMs int32 // group.share.max.heartbeat.interval.ms

	Assignors string // group.share.assignors; only "simple" exists

	FetchPurgatoryPurgeIntervalRequests int32 // share.fetch.purgatory.purge.interval.requests; unused
}

// DefaultShareConfig returns Kafka 4.2's defaults (plus the [4.3] bounds).
func DefaultShareConfig() ShareConfig {
	var c ShareConfig
	for _, p := range shareBrokerProps {
		if err := p.set(&c, p.Default); err != nil {
			panic("group: bad default for " + p.Name + ": " + err.Error())
		}
	}
	return c
}

// BrokerProperty describes one broker-level property this package owns, for
// the broker's property table (flags, config file, DescribeConfigs BROKER,
// the README's reference).
type BrokerProperty struct {
	// Def declares the property. Min and Max are its own range as Kafka's
	// ConfigDef states it; cross-property rules (within the min/max pair,
	// session greater than heartbeat) are checked by ShareConfig.Validate.
	configdef.Def
	// Set parses value and stores it in c, checking Min and Max.
	Set func(c *ShareConfig, value string) error
	// Get renders the property's value in c.
	Get func(c *ShareConfig) string
}

type brokerProp struct {
	configdef.Def
	field func(c *ShareConfig) *int32 // nil for the string property
}

func (p brokerProp) set(c *ShareConfig, value string) error {
	if p.field == nil { // group.share.assignors
		v := strings.TrimSpace(value)
		if v != "simple" {
			return fmt.Errorf("%s: only the simple assignor exists, got %q", p.Name, value)
		}
		c.Assignors = v
		return nil
	}
	n, err := parseIntProp(p.Name, value, p.Min, p.Max)
	if err != nil {
		return err
	}
	*p.field(c) = int32(n)
	return nil
}

func (p brokerProp) get(c *ShareConfig) string {
	if p.field == nil {
		return c.Assignors
	}
	return strconv.FormatInt(int64(*p.field(c)), 10)
}

const maxInt32 = math.MaxInt32

// shareBrokerProps declares the group.share.* broker properties, with
// Kafka's own ranges (share-groups.md §5.6) and their meaning.
var shareBrokerProps = []brokerProp{
	shareInt("group.share.record.lock.duration.ms", "30000", 1000, 3600000, func(c *ShareConfig) *int32 { return &c.RecordLockDurationMs },
		"Default acquisition lock duration of share groups (share.record.lock.duration.ms)."),
	shareInt("group.share.min.record.lock.duration.ms", "15000", 1000, 30000, func(c *ShareConfig) *int32 { return &c.MinRecordLockDurationMs },
		"Lowest share.record.lock.duration.ms a group may set."),
	shareInt("group.share.max.record.lock.duration.ms", "60000", 30000, 3600000, func(c *ShareConfig) *int32 { return &c.MaxRecordLockDurationMs },
		"Highest share.record.lock.duration.ms a group may set."),
	shareInt("group.share.delivery.count.limit", "5", 2, 10, func(c *ShareConfig) *int32 { return &c.DeliveryCountLimit },
		"Default delivery attempts before a record is archived (share.delivery.count.limit)."),
	shareInt("group.share.min.delivery.count.limit", "2", 2, 5, func(c *ShareConfig) *int32 { return &c.MinDeliveryCountLimit },
		"Lowest share.delivery.count.limit a group may set (Kafka 4.3)."),
	shareInt("group.share.max.delivery.count.limit", "10", 5, 25, func(c *ShareConfig) *int32 { return &c.MaxDeliveryCountLimit },
		"Highest share.delivery.count.limit a group may set (Kafka 4.3)."),
	shareInt("group.share.partition.max.record.locks", "2000", 100, 10000, func(c *ShareConfig) *int32 { return &c.PartitionMaxRecordLocks },
		"Default in-flight record limit per share partition (share.partition.max.record.locks)."),
	shareInt("group.share.min.partition.max.record.locks", "100", 100, 2000, func(c *ShareConfig) *int32 { return &c.MinPartitionMaxRecordLocks },
		"Lowest share.partition.max.record.locks a group may set (Kafka 4.3)."),
	shareInt("group.share.max.partition.max.record.locks", "4000", 2000, 10000, func(c *ShareConfig) *int32 { return &c.MaxPartitionMaxRecordLocks },
		"Highest share.partition.max.record.locks a group may set (Kafka 4.3)."),
	shareInt("group.share.max.share.sessions", "2000", 1, maxInt32, func(c *ShareConfig) *int32 { return &c.MaxShareSessions },
		"Most share sessions the broker holds; must be at least group.share.max.size."),
	shareInt("group.share.max.size", "200", 1, 1000, func(c *ShareConfig) *int32 { return &c.MaxSize },
		"Most members of one share group."),
	shareInt("group.share.session.timeout.ms", "45000", 1, maxInt32, func(c *ShareConfig) *int32 { return &c.SessionTimeoutMs },
		"Default member session timeout of share groups (share.session.timeout.ms)."),
	shareInt("group.share.min.session.timeout.ms", "45000", 1, maxInt32, func(c *ShareConfig) *int32 { return &c.MinSessionTimeoutMs },
		"Lowest share.session.timeout.ms a group may set."),
	shareInt("group.share.max.session.timeout.ms", "60000", 1, maxInt32, func(c *ShareConfig) *int32 { return &c.MaxSessionTimeoutMs },
		"Highest share.session.timeout.ms a group may set."),
	shareInt("group.share.heartbeat.interval.ms", "5000", 1, maxInt32, func(c *ShareConfig) *int32 { return &c.HeartbeatIntervalMs },
		"Default heartbeat interval of share groups (share.heartbeat.interval.ms)."),
	shareInt("group.share.min.heartbeat.interval.ms", "5000", 1, maxInt32, func(c *ShareConfig) *int32 { return &c.MinHeartbeatIntervalMs },
		"Lowest share.heartbeat.interval.ms a group may set."),
	shareInt("group.share.max.heartbeat.interval.ms", "15000", 1, maxInt32, func(c *ShareConfig) *int32 { return &c.MaxHeartbeatIntervalMs },
		"Highest share.heartbeat.interval.ms a group may set."),
	{configdef.Def{Name: "group.share.assignors", Scope: configdef.Broker, Kind: configdef.Enum, Default: "simple", Enum: []string{"simple"},
		Doc: "Share group assignor; only simple exists."}, nil},
	shareInt("share.fetch.purgatory.purge.interval.requests", "1000", math.MinInt32, maxInt32, func(c *ShareConfig) *int32 { return &c.FetchPurgatoryPurgeIntervalRequests },
		"Accepted for compatibility; has no effect here."),
}

// shareInt declares a group.share.* INT property stored in field.
func shareInt(name, def string, min, max int64, field func(c *ShareConfig) *int32, doc string) brokerProp {
	return brokerProp{configdef.Def{Name: name, Scope: configdef.Broker, Kind: configdef.Int, Default: def, Min: min, Max: max, Doc: doc}, field}
}

// ShareBrokerProperties lists the broker properties of share groups with
// their defaults, ranges and accessors, in a stable order.
func ShareBrokerProperties() []BrokerProperty {
	out := make([]BrokerProperty, len(shareBrokerProps))
	for i, p := range shareBrokerProps {
		out[i] = BrokerProperty{Def: p.Def, Set: p.set, Get: p.get}
	}
	return out
}

// Validate checks every value against its own range and the rules that tie
// properties together. The error names the offending property, as Kafka's
// startup failure does.
func (c *ShareConfig) Validate() error {
	for _, p := range shareBrokerProps {
		if err := p.set(&ShareConfig{}, p.get(c)); err != nil {
			return err
		}
	}
	type bounded struct {
		name          string
		v, min, max   int32
		minName, maxN string
	}
	pairs := []bounded{
		{"group.share.record.lock.duration.ms", c.RecordLockDurationMs, c.MinRecordLockDurationMs, c.MaxRecordLockDurationMs, "group.share.min.record.lock.duration.ms", "group.share.max.record.lock.duration.ms"},
		{"group.share.delivery.count.limit", c.DeliveryCountLimit, c.MinDeliveryCountLimit, c.MaxDeliveryCountLimit, "group.share.min.delivery.count.limit", "group.share.max.delivery.count.limit"},
		{"group.share.partition.max.record.locks", c.PartitionMaxRecordLocks, c.MinPartitionMaxRecordLocks, c.MaxPartitionMaxRecordLocks, "group.share.min.partition.max.record.locks", "group.share.max.partition.max.record.locks"},
		{"group.share.session.timeout.ms", c.SessionTimeoutMs, c.MinSessionTimeoutMs, c.MaxSessionTimeoutMs, "group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms"},
		{"group.share.heartbeat.interval.ms", c.HeartbeatIntervalMs, c.MinHeartbeatIntervalMs, c.MaxHeartbeatIntervalMs, "group.share.min.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms"},
	}
	for _, b := range pairs {
		if b.max < b.min {
			return fmt.Errorf("%s (%d) must be greater than or equal to %s (%d)", b.maxN, b.max, b.minName, b.min)
		}
		if b.v < b.min || b.v > b.max {
			return fmt.Errorf("%s (%d) must be within [%s, %s] = [%d, %d]", b.name, b.v, b.minName, b.maxN, b.min, b.max)
		}
	}
	if c.SessionTimeoutMs <= c.HeartbeatIntervalMs {
		return fmt.Errorf("group.share.session.timeout.ms (%d) must be greater than group.share.heartbeat.interval.ms (%d)", c.SessionTimeoutMs, c.HeartbeatIntervalMs)
	}
	if c.MaxShareSessions < c.MaxSize {
		return fmt.Errorf("group.share.max.share.sessions (%d) must be greater than or equal to group.share.max.size (%d)", c.MaxShareSessions, c.MaxSize)
	}
	return nil
}

// parseIntProp parses a Kafka INT the way ConfigDef does (surrounding
// spaces allowed) and checks it against [min, max].
func parseIntProp(name, value string, min, max int64) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not a 32-bit integer", name, value)
	}
	if n < min || n > max {
		return 0, fmt.Errorf("%s: %d is out of range [%d, %d]", name, n, min, max)
	}
	return n, nil
}

// OffsetResetKind is how a share partition picks its start offset (§1.7).
type OffsetResetKind uint8

// Offset reset strategies of share.auto.offset.reset.
const (
	ResetLatest OffsetResetKind = iota
	ResetEarliest
	ResetByDuration
)

// OffsetReset is a parsed share.auto.offset.reset value.
type OffsetReset struct {
	Kind OffsetResetKind
	// Duration is the look-back of ResetByDuration: start at the first
	// record whose timestamp is at or after now - Duration.
	Duration time.Duration
}

// String renders the value as Kafka would display it.
func (r OffsetReset) String() string {
	switch r.Kind {
	case ResetEarliest:
		return "earliest"
	case ResetByDuration:
		return "by_duration:" + formatISODuration(r.Duration)
	}
	return "latest"
}

// ParseOffsetReset parses share.auto.offset.reset: "latest", "earliest" or
// "by_duration:<ISO-8601 duration>" with a non-negative duration. As in
// Kafka's ShareGroupAutoOffsetResetStrategy.fromString the keywords are
// exact, in lower case (group-config-exact); the duration's letters may be
// in either case, as java.time.Duration.parse takes them.
func ParseOffsetReset(s string) (OffsetReset, error) {
	switch {
	case s == "latest":
		return OffsetReset{Kind: ResetLatest}, nil
	case s == "earliest":
		return OffsetReset{Kind: ResetEarliest}, nil
	case strings.HasPrefix(s, "by_duration:"):
		d, err := ParseISODuration(s[len("by_duration:"):])
		if err != nil {
			return OffsetReset{}, err
		}
		if d < 0 {
			return OffsetReset{}, fmt.Errorf("duration %s is negative", s[len("by_duration:"):])
		}
		return OffsetReset{Kind: ResetByDuration, Duration: d}, nil
	}
	return OffsetReset{}, errors.New("the value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS.>'")
}

// ParseISODuration parses the ISO-8601 duration subset java.time.Duration
// accepts: [sign]P[nD][T[nH][nM][n[.fraction]S]], letters in either case,
// each number optionally signed, at least one component, and a T only when
// a time component follows. Years, months and weeks are not durations.
// The result may be negative; callers decide whether that is allowed.
func ParseISODuration(s string) (time.Duration, error) {
	bad := func() (time.Duration, error) {
		return 0, fmt.Errorf("%q is not an ISO-8601 duration of the form PnDTnHnMn.nS", s)
	}
	str := strings.ToUpper(s)
	neg := false
	if str != "" && (str[0] == '+' || str[0] == '-') {
		neg = str[0] == '-'
		str = str[1:]
	}
	if !strings.HasPrefix(str, "P") {
		return bad()
	}
	str = str[1:]
	datePart, timePart, hasT := strings.Cut(str, "T")
	if hasT && timePart == "" {
		return bad()
	}
	var total float64 // seconds; float avoids overflow checks on each term
	components := 0
	// Each part is a run of <signed number><unit>; units must appear in
	// order and at most once.
	parse := func(part string, units string, scale []float64) bool {
		next := 0
		for part != "" {
			i := 0
			if part[0] == '+' || part[0] == '-' {
				i++
			}
			start := i
			for i < len(part) && part[i] >= '0' && part[i] <= '9' {
				i++
			}
			digits := i - start
			frac := ""
			if i < len(part) && (part[i] == '.' || part[i] == ',') {
				j := i + 1
				for j < len(part) && part[j] >= '0' && part[j] <= '9' {
					j++
				}
				frac = part[i+1 : j]
				if len(frac) > 9 {
					return false
				}
				i = j
			}
			if digits == 0 || i >= len(part) {
				return false
			}
			u := strings.IndexByte(units, part[i])
			if u < next {
				return false
			}
			if frac != "" && units[u] != 'S' {
				return false // only seconds take a fraction
			}
			v, err := strconv.ParseFloat(strings.Replace(part[:i], ",", ".", 1), 64)
			if err != nil {
				return false
			}
			total += v * scale[u]
			components++
			next = u + 1
			part = part[i+1:]
		}
		return true
	}
	if !parse(datePart, "D", []float64{86400}) || !parse(timePart, "HMS", []float64{3600, 60, 1}) {
		return bad()
	}
	if components == 0 {
		return bad()
	}
	if neg {
		total = -total
	}
	if math.Abs(total) > float64(math.MaxInt64)/float64(time.Second) {
		return 0, fmt.Errorf("%q is too long", s)
	}
	return time.Duration(math.Round(total * float64(time.Second))), nil
}

// formatISODuration renders d in the PTnHnMn.nS form Java prints.
func formatISODuration(d time.Duration) string {
	if d == 0 {
		return "PT0S"
	}
	var b strings.Builder
	b.WriteString("PT")
	if h := d / time.Hour; h != 0 {
		fmt.Fprintf(&b, "%dH", h)
		d -= h * time.Hour
	}
	if m := d / time.Minute; m != 0 {
		fmt.Fprintf(&b, "%dM", m)
		d -= m * time.Minute
	}
	if d != 0 {
		b.WriteString(strconv.FormatFloat(d.Seconds(), 'f', -1, 64))
		b.WriteString("S")
	}
	return b.String()
}

// IsolationLevel is share.isolation.level.
type IsolationLevel uint8

// Isolation levels.
const (
	ReadUncommitted IsolationLevel = iota
	ReadCommitted
)

// ShareGroupConfig is one share group's effective configuration: its GROUP
// overrides, with broker defaults for the rest.
type ShareGroupConfig struct {
	AutoOffsetReset         OffsetReset
	IsolationLevel          IsolationLevel
	RecordLockDuration      time.Duration
	SessionTimeout          time.Duration
	HeartbeatInterval       time.Duration
	DeliveryCountLimit      int32
	PartitionMaxRecordLocks int32
	RenewAcknowledgeEnable  bool
	// DeadLetter is the group's dead-letter queue (KIP-1191); its zero
	// value, no topic, means none (dead_letter.go).
	DeadLetter DeadLetterConfig
}
