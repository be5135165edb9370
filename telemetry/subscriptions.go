package telemetry

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sharebroker/sharebroker/internal/refusal"
)

// The configs of a CLIENT_METRICS resource (ClientMetricsConfigs).
const (
	ConfigMetrics  = "metrics"
	ConfigInterval = "interval.ms"
	ConfigMatch    = "match"
	// AllMetrics in metrics subscribes to every metric.
	AllMetrics = "*"
	// DefaultMetrics is what the default subscription requests: the
	// prefix of every KIP-714 client metric name, so every metric. Not
	// "*", which the Java client and librdkafka read as every metric but
	// franz-go (1.22.3) as a literal prefix, so that it sent none.
	DefaultMetrics = "org.apache.kafka."
	// DefaultInterval is interval.ms' default (5 minutes).
	DefaultInterval = 5 * time.Minute
	minIntervalMs   = 100
	maxIntervalMs   = 3600000
)

// The client attributes a match pattern may name
// (ClientMetricsConfigs.ALLOWED_MATCH_PARAMS).
const (
	MatchInstanceID      = "client_instance_id"
	MatchClientID        = "client_id"
	MatchSoftwareName    = "client_software_name"
	MatchSoftwareVersion = "client_software_version"
	MatchSourceAddress   = "client_source_address"
	MatchSourcePort      = "client_source_port"
)

var matchParams = []string{MatchInstanceID, MatchClientID, MatchSoftwareName, MatchSoftwareVersion, MatchSourceAddress, MatchSourcePort}

// ConfigDef describes one CLIENT_METRICS config for DescribeConfigs.
type ConfigDef struct {
	Name    string
	Default string
	List    bool // a LIST config (APPEND and SUBTRACT apply); else INT
	Doc     string
}

// ConfigDefs are the CLIENT_METRICS configs, in Kafka's order.
var ConfigDefs = []ConfigDef{
	{Name: ConfigMetrics, Default: "", List: true,
		Doc: "Telemetry metric name prefixes the matching clients send; `*` is every metric, empty none."},
	{Name: ConfigInterval, Default: strconv.Itoa(int(DefaultInterval / time.Millisecond)),
		Doc: "Push interval in milliseconds, 100 to 3600000; a client matching several subscriptions pushes at the shortest."},
	{Name: ConfigMatch, Default: "", List: true,
		Doc: "Client match criteria, `attribute=regex` each, all of which must match the whole attribute; empty matches every client. Attributes: client_instance_id, client_id, client_software_name, client_software_version, client_source_address, client_source_port."},
}

// LookupConfig returns the CLIENT_METRICS config named name.
func LookupConfig(name string) (ConfigDef, bool) {
	i := slices.IndexFunc(ConfigDefs, func(d ConfigDef) bool { return d.Name == name })
	if i < 0 {
		return ConfigDef{}, false
	}
	return ConfigDefs[i], true
}

// subscription is one CLIENT_METRICS resource (Kafka's SubscriptionInfo),
// parsed from its configs.
type subscription struct {
	configs  map[string]string
	metrics  []string
	interval time.Duration
	match    map[string]*regexp.Regexp
}

// parseSubscription validates a CLIENT_METRICS resource's configs as
// ClientMetricsConfigs.validate does, with its errors: an empty name, an
// unknown config or an interval out of bounds is INVALID_REQUEST, a value
// of the wrong type or a bad match pattern INVALID_CONFIG.
func parseSubscription(name string, configs map[string]string) (*subscription, error) {
	if name == "" {
		return nil, refusal.New(ErrInvalidConfigRequest, "Subscription name can't be empty")
	}
	for _, k := range slices.Sorted(maps.Keys(configs)) {
		if _, ok := LookupConfig(k); !ok {
			return nil, refusal.New(ErrInvalidConfigRequest, "Unknown client metrics configuration: "+k)
		}
	}
	s := &subscription{configs: configs, metrics: splitList(configs[ConfigMetrics]), interval: DefaultInterval}
	if v, ok := configs[ConfigInterval]; ok {
		ms, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		if err != nil {
			return nil, refusal.New(ErrInvalidConfig, fmt.Sprintf("Invalid value %s for configuration %s: Not a number of type INT", v, ConfigInterval))
		}
		if ms < minIntervalMs || ms > maxIntervalMs {
			return nil, refusal.New(ErrInvalidConfigRequest, fmt.Sprintf("Invalid value %d for %s, interval must be between 100 and 3600000 (1 hour)", ms, ConfigInterval))
		}
		s.interval = time.Duration(ms) * time.Millisecond
	}
	match, err := parseMatch(splitList(configs[ConfigMatch]))
	if err != nil {
		return nil, err
	}
	s.match = match
	return s, nil
}

// parseMatch parses match patterns as ClientMetricsConfigs.parseMatchingPatterns:
// each splits at its first '=' (KAFKA-21041: the regular expression may
// hold '=', ClientMetricsConfigsTest.testParseMatchingPatternsRegexContainingEquals),
// the attribute, trimmed, one Kafka allows, the value, trimmed, a regular
// expression that compiles; a later pattern for the same attribute
// replaces an earlier one. Kafka compiles with java.util.regex; Go's RE2
// syntax is its common subset (docs/telemetry.md telemetry-match).
func parseMatch(patterns []string) (map[string]*regexp.Regexp, error) {
	out := make(map[string]*regexp.Regexp, len(patterns))
	for _, p := range patterns {
		illegal := refusal.New(ErrInvalidConfig, "Illegal client matching pattern: "+p)
		param, expr, ok := strings.Cut(p, "=")
		param, expr = strings.TrimSpace(param), strings.TrimSpace(expr)
		if !ok || !slices.Contains(matchParams, param) {
			return nil, illegal
		}
		if _, err := regexp.Compile(expr); err != nil {
			return nil, illegal
		}
		re, err := regexp.Compile(`^(?:` + expr + `)$`)
		if err != nil {
			return nil, illegal
		}
		out[param] = re
	}
	return out, nil
}

// splitList parses a LIST config as Kafka's ConfigDef does: empty (after
// trimming) is the empty list, else the items between commas, trimmed.
func splitList(v string) []string {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil
	}
	items := strings.Split(v, ",")
	for i := range items {
		items[i] = strings.TrimSpace(items[i])
	}
	return items
}

// matches reports whether every pattern of s matches the whole of its
// attribute of c (ClientMetricsInstanceMetadata.isMatch); no patterns
// match every client.
func (s *subscription) matches(c Client) bool {
	for param, re := range s.match {
		v, ok := attribute(c, param)
		if !ok || !re.MatchString(v) {
			return false
		}
	}
	return true
}

// attribute is the client's value of a match attribute; an address or
// port the broker does not know is absent, which no pattern matches.
func attribute(c Client, param string) (string, bool) {
	switch param {
	case MatchInstanceID:
		return UUIDString(c.InstanceID), true
	case MatchClientID:
		return c.ClientID, true
	case MatchSoftwareName:
		return c.SoftwareName, true
	case MatchSoftwareVersion:
		return c.SoftwareVersion, true
	case MatchSourceAddress:
		return javaHostAddress(c.SourceAddress), c.SourceAddress != ""
	case MatchSourcePort:
		return strconv.Itoa(c.SourcePort), c.SourcePort > 0
	}
	return "", false
}

// javaHostAddress writes a source address as Java's
// InetAddress.getHostAddress does, the text Kafka matches
// client_source_address against (ClientMetricsInstanceMetadata). The
// broker gives Go's form (net.IP.String): IPv4 dotted, the same in Java;
// IPv6 with "::" compression, which Java writes out as eight groups of hex
// without leading zeros, so ::1 is 0:0:0:0:0:0:0:1. A zone is kept after
// its '%'. (Plain string work: this package does not import net.)
func javaHostAddress(addr string) string {
	host, zone, hasZone := strings.Cut(addr, "%")
	if !strings.Contains(host, ":") || strings.Contains(host, ".") {
		return addr
	}
	head, tail, compressed := strings.Cut(host, "::")
	split := func(s string) []string {
		if s == "" {
			return nil
		}
		return strings.Split(s, ":")
	}
	groups := split(head)
	if compressed {
		rest := split(tail)
		if len(groups)+len(rest) > 7 {
			return addr
		}
		groups = append(append(groups, make([]string, 8-len(groups)-len(rest))...), rest...)
	}
	if len(groups) != 8 {
		return addr
	}
	for i, g := range groups {
		if g == "" {
			g = "0"
		}
		v, err := strconv.ParseUint(g, 16, 16)
		if err != nil {
			return addr
		}
		groups[i] = strconv.FormatUint(v, 16)
	}
	out := strings.Join(groups, ":")
	if hasZone {
		out += "%" + zone
	}
	return out
}

// matchLocked is the union of the metrics of every subscription matching
// c, with the shortest of their intervals and Kafka's 5 minutes when none
// matches; any "*" makes it just "*" (createClientInstance). While no
// subscription exists, the default subscription, if on, gives
// DefaultMetrics at its interval (telemetry-default-subscription).
func (m *Manager) matchLocked(c Client) ([]string, time.Duration) {
	if len(m.subs) == 0 && m.opts.Default != nil {
		return []string{DefaultMetrics}, m.opts.Default.Interval
	}
	interval := DefaultInterval
	var metrics []string
	all := false
	// In name order, so the set's order among equal hash buckets does not
	// depend on map iteration (telemetry-subscription-id).
	for _, name := range slices.Sorted(maps.Keys(m.subs)) {
		s := m.subs[name]
		if !s.matches(c) {
			continue
		}
		interval = min(interval, s.interval)
		for _, x := range s.metrics {
			all = all || x == AllMetrics
			if !slices.Contains(metrics, x) {
				metrics = append(metrics, x)
			}
		}
	}
	if all {
		return []string{AllMetrics}, interval
	}
	return javaHashSetOrder(metrics), interval
}

// ConfigValue is one CLIENT_METRICS config as DescribeConfigs reports it.
type ConfigValue struct {
	ConfigDef
	Value string
	Set   bool // set on the resource; else the default
}

// Describe returns every config of the CLIENT_METRICS resource name, the
// defaults where nothing is set; a resource that does not exist describes
// as all defaults, as Kafka's ConfigHelper.describeConfigs answers it
// (ClientMetricsConfigs.fromProps over defaultConfigsMap).
func (m *Manager) Describe(name string) ([]ConfigValue, error) {
	if name == "" {
		return nil, refusal.New(ErrInvalidConfigRequest, "Client metrics subscription name must not be empty")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.subs[name]
	if !ok {
		s = &subscription{interval: DefaultInterval}
	}
	out := make([]ConfigValue, 0, len(ConfigDefs))
	for _, d := range ConfigDefs {
		_, set := s.configs[d.Name]
		out = append(out, ConfigValue{ConfigDef: d, Value: s.value(d.Name), Set: set})
	}
	return out, nil
}

// value is a config's value as Kafka's ConfigDef.convertToString prints
// the parsed value: a list's items joined by commas, the interval in
// milliseconds.
func (s *subscription) value(name string) string {
	switch name {
	case ConfigMetrics:
		return strings.Join(s.metrics, ",")
	case ConfigInterval:
		return strconv.FormatInt(s.interval.Milliseconds(), 10)
	case ConfigMatch:
		return strings.Join(splitList(s.configs[ConfigMatch]), ",")
	}
	return ""
}

// Alter replaces the configs of the CLIENT_METRICS resource name with what
// next makes of its current ones (a copy). The result is validated as a
// whole; an empty result deletes the resource (ClientMetricsManager.updateSubscription).
// Every instance is re-evaluated at its next request. With validateOnly
// nothing changes.
func (m *Manager) Alter(name string, validateOnly bool, next func(current map[string]string) (map[string]string, error)) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	current := map[string]string{}
	if s, ok := m.subs[name]; ok {
		current = maps.Clone(s.configs)
	}
	updated, err := next(current)
	if err != nil {
		return err
	}
	s, err := parseSubscription(name, updated)
	if err != nil || validateOnly {
		return err
	}
	if len(updated) == 0 {
		if _, ok := m.subs[name]; ok {
			delete(m.subs, name)
			m.version++
			m.record(name, nil)
		}
		return nil
	}
	m.subs[name] = s
	m.version++
	m.record(name, updated)
	return nil
}

// record tells the journal of a change, if there is one.
func (m *Manager) record(name string, configs map[string]string) {
	if m.journal != nil {
		m.journal(name, configs)
	}
}

// SetJournal has j told every later subscription change, with the whole
// config set of the subscription (none: deleted), under the Manager's
// lock, in the order the changes are made (client-metrics-kept).
func (m *Manager) SetJournal(j func(name string, configs map[string]string)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.journal = j
}

// Restore puts back a subscription a data directory kept, checked as a
// change would be; a set that no longer passes (written by another
// version) is refused and not restored.
func (m *Manager) Restore(name string, configs map[string]string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, err := parseSubscription(name, maps.Clone(configs))
	if err != nil {
		return err
	}
	if len(configs) > 0 {
		m.subs[name] = s
		m.version++
	}
	return nil
}

// Names lists the CLIENT_METRICS resources, sorted.
func (m *Manager) Names() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(maps.Keys(m.subs))
}
