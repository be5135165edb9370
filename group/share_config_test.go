package group

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseISODuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{in: "PT1H", want: time.Hour},
		{in: "pt1h", want: time.Hour},
		{in: "P1D", want: 24 * time.Hour},
		{in: "P1DT2H3M4S", want: 26*time.Hour + 3*time.Minute + 4*time.Second},
		{in: "PT1.5S", want: 1500 * time.Millisecond},
		{in: "PT0,25S", want: 250 * time.Millisecond},
		{in: "PT0S", want: 0},
		{in: "+PT10M", want: 10 * time.Minute},
		{in: "-PT10M", want: -10 * time.Minute},
		{in: "PT-10M", want: -10 * time.Minute},
		{in: "P1DT-1H", want: 23 * time.Hour},
		{in: "", bad: true},
		{in: "P", bad: true},
		{in: "PT", bad: true},
		{in: "1H", bad: true},
		{in: "P1Y", bad: true},
		{in: "P1W", bad: true},
		{in: "P1M", bad: true},
		{in: "PT1S1M", bad: true},
		{in: "PT1H1H", bad: true},
		{in: "PT1.5M", bad: true},
		{in: "PTH", bad: true},
		{in: "PT1", bad: true},
		{in: "PT1.0000000001S", bad: true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseISODuration(tc.in)
			if tc.bad {
				if err == nil {
					t.Fatalf("accepted, got %v", got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestParseOffsetReset(t *testing.T) {
	tests := []struct {
		in   string
		want OffsetReset
		bad  bool
	}{
		{in: "latest", want: OffsetReset{Kind: ResetLatest}},
		{in: "LATEST", bad: true}, // exact lower-case keywords (group-config-exact)
		{in: "By_Duration:PT1H", bad: true},
		{in: "by_duration:pt1h", want: OffsetReset{Kind: ResetByDuration, Duration: time.Hour}},
		{in: "earliest", want: OffsetReset{Kind: ResetEarliest}},
		{in: "by_duration:PT1H", want: OffsetReset{Kind: ResetByDuration, Duration: time.Hour}},
		{in: "by_duration:P2D", want: OffsetReset{Kind: ResetByDuration, Duration: 48 * time.Hour}},
		{in: "by_duration:PT0S", want: OffsetReset{Kind: ResetByDuration}},
		{in: "by_duration:-PT1H", bad: true},
		{in: "by_duration:PT-1S", bad: true},
		{in: "by_duration:", bad: true},
		{in: "by_duration:1h", bad: true},
		{in: "none", bad: true},
		{in: "", bad: true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseOffsetReset(tc.in)
			if tc.bad {
				if err == nil {
					t.Fatalf("accepted, got %+v", got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
	if s := (OffsetReset{Kind: ResetByDuration, Duration: 90*time.Minute + 1500*time.Millisecond}).String(); s != "by_duration:PT1H30M1.5S" {
		t.Fatalf("String: %s", s)
	}
}

func TestShareConfigValidate(t *testing.T) {
	if err := (&ShareConfig{}).Validate(); err == nil {
		t.Fatal("zero config accepted")
	}
	def := DefaultShareConfig()
	if err := def.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	tests := []struct {
		name    string
		change  func(c *ShareConfig)
		wantErr string // substring naming the offending property
	}{
		{"lock duration below own range", func(c *ShareConfig) { c.RecordLockDurationMs = 999 }, "group.share.record.lock.duration.ms"},
		{"lock duration above max", func(c *ShareConfig) { c.RecordLockDurationMs = 60001 }, "group.share.record.lock.duration.ms"},
		{"min lock above own range", func(c *ShareConfig) { c.MinRecordLockDurationMs = 30001 }, "group.share.min.record.lock.duration.ms"},
		{"delivery limit 11", func(c *ShareConfig) { c.DeliveryCountLimit = 11 }, "group.share.delivery.count.limit"},
		{"delivery limit above group max", func(c *ShareConfig) { c.MaxDeliveryCountLimit = 6; c.DeliveryCountLimit = 7 }, "group.share.delivery.count.limit"},
		{"record locks 99", func(c *ShareConfig) { c.PartitionMaxRecordLocks = 99 }, "group.share.partition.max.record.locks"},
		{"max size 0", func(c *ShareConfig) { c.MaxSize = 0 }, "group.share.max.size"},
		{"max size 1001", func(c *ShareConfig) { c.MaxSize = 1001 }, "group.share.max.size"},
		{"sessions below max size", func(c *ShareConfig) { c.MaxShareSessions = 199 }, "group.share.max.share.sessions"},
		{"session below min", func(c *ShareConfig) { c.SessionTimeoutMs = 44999 }, "group.share.session.timeout.ms"},
		{"session max below min", func(c *ShareConfig) { c.MaxSessionTimeoutMs = 40000 }, "group.share.max.session.timeout.ms"},
		{"heartbeat above max", func(c *ShareConfig) { c.HeartbeatIntervalMs = 15001 }, "group.share.heartbeat.interval.ms"},
		{"session not above heartbeat", func(c *ShareConfig) {
			c.MinSessionTimeoutMs, c.SessionTimeoutMs = 5000, 5000
		}, "must be greater than group.share.heartbeat.interval.ms"},
		{"assignor", func(c *ShareConfig) { c.Assignors = "range" }, "group.share.assignors"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultShareConfig()
			tc.change(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got %v, want mention of %s", err, tc.wantErr)
			}
		})
	}
}

func TestShareBrokerProperties(t *testing.T) {
	props := ShareBrokerProperties()
	want := map[string]string{
		"group.share.record.lock.duration.ms":           "30000",
		"group.share.min.record.lock.duration.ms":       "15000",
		"group.share.max.record.lock.duration.ms":       "60000",
		"group.share.delivery.count.limit":              "5",
		"group.share.min.delivery.count.limit":          "2",
		"group.share.max.delivery.count.limit":          "10",
		"group.share.partition.max.record.locks":        "2000",
		"group.share.min.partition.max.record.locks":    "100",
		"group.share.max.partition.max.record.locks":    "4000",
		"group.share.max.share.sessions":                "2000",
		"group.share.max.size":                          "200",
		"group.share.session.timeout.ms":                "45000",
		"group.share.min.session.timeout.ms":            "45000",
		"group.share.max.session.timeout.ms":            "60000",
		"group.share.heartbeat.interval.ms":             "5000",
		"group.share.min.heartbeat.interval.ms":         "5000",
		"group.share.max.heartbeat.interval.ms":         "15000",
		"group.share.assignors":                         "simple",
		"share.fetch.purgatory.purge.interval.requests": "1000",
	}
	if len(props) != len(want) {
		t.Fatalf("%d properties, want %d", len(props), len(want))
	}
	def := DefaultShareConfig()
	for _, p := range props {
		t.Run(p.Name, func(t *testing.T) {
			if p.Default != want[p.Name] || p.Get(&def) != want[p.Name] {
				t.Fatalf("default %q, Get %q, want %q", p.Default, p.Get(&def), want[p.Name])
			}
			c := DefaultShareConfig()
			if err := p.Set(&c, " "+p.Default+" "); err != nil {
				t.Fatalf("Set default: %v", err)
			}
			if err := p.Set(&c, "x"); err == nil || !strings.Contains(err.Error(), p.Name) {
				t.Fatalf("Set x: %v", err)
			}
			if p.Max > p.Min && p.Max < maxInt32 {
				if err := p.Set(&c, "99999999"); err == nil {
					t.Fatal("accepted a value above the range")
				}
			}
		})
	}
}

func TestGroupConfigAlter(t *testing.T) {
	tests := []struct {
		name  string
		ops   []ConfigOp
		valid bool
		msg   string
	}{
		{"lock duration in range", []ConfigOp{{Name: "share.record.lock.duration.ms", Value: "15000"}}, true, ""},
		{"lock duration below floor", []ConfigOp{{Name: "share.record.lock.duration.ms", Value: "999"}}, false, "at least 1000"},
		{"lock duration below broker min", []ConfigOp{{Name: "share.record.lock.duration.ms", Value: "14999"}}, false, "share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive."},
		{"lock duration above broker max", []ConfigOp{{Name: "share.record.lock.duration.ms", Value: "60001"}}, false, "share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive."},
		{"lock duration not a number", []ConfigOp{{Name: "share.record.lock.duration.ms", Value: "1e4"}}, false, "Invalid value 1e4 for configuration share.record.lock.duration.ms: Not a number of type INT"},
		{"delivery limit", []ConfigOp{{Name: "share.delivery.count.limit", Value: "10"}}, true, ""},
		{"delivery limit 1", []ConfigOp{{Name: "share.delivery.count.limit", Value: "1"}}, false, "at least 2"},
		{"delivery limit 11", []ConfigOp{{Name: "share.delivery.count.limit", Value: "11"}}, false, "share.delivery.count.limit must be in the range 2 to 10 inclusive."},
		{"record locks", []ConfigOp{{Name: "share.partition.max.record.locks", Value: "100"}}, true, ""},
		{"record locks 99", []ConfigOp{{Name: "share.partition.max.record.locks", Value: "99"}}, false, "at least 100"},
		{"record locks 4001", []ConfigOp{{Name: "share.partition.max.record.locks", Value: "4001"}}, false, "share.partition.max.record.locks must be in the range 100 to 4000 inclusive."},
		{"reset earliest", []ConfigOp{{Name: "share.auto.offset.reset", Value: "earliest"}}, true, ""},
		{"reset by_duration", []ConfigOp{{Name: "share.auto.offset.reset", Value: "by_duration:PT30M"}}, true, ""},
		{"reset negative duration", []ConfigOp{{Name: "share.auto.offset.reset", Value: "by_duration:-PT30M"}}, false, "Invalid value by_duration:-PT30M for configuration share.auto.offset.reset"},
		{"reset none", []ConfigOp{{Name: "share.auto.offset.reset", Value: "none"}}, false, "share.auto.offset.reset"},
		{"isolation committed", []ConfigOp{{Name: "share.isolation.level", Value: "read_committed"}}, true, ""},
		{"isolation bad", []ConfigOp{{Name: "share.isolation.level", Value: "committed"}}, false, "share.isolation.level"},
		{"heartbeat max", []ConfigOp{{Name: "share.heartbeat.interval.ms", Value: "15000"}}, true, ""},
		{"heartbeat below min", []ConfigOp{{Name: "share.heartbeat.interval.ms", Value: "4999"}}, false, "share.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive."},
		{"session max", []ConfigOp{{Name: "share.session.timeout.ms", Value: "60000"}}, true, ""},
		{"session above max", []ConfigOp{{Name: "share.session.timeout.ms", Value: "60001"}}, false, "share.session.timeout.ms must be in the range 45000 to 60000 inclusive."},
		{"renew false", []ConfigOp{{Name: "share.renew.acknowledge.enable", Value: "FALSE"}}, true, ""},
		{"renew bad", []ConfigOp{{Name: "share.renew.acknowledge.enable", Value: "yes"}}, false, "true or false"},
		{"consumer session", []ConfigOp{{Name: "consumer.session.timeout.ms", Value: "50000"}}, true, ""},
		{"consumer heartbeat", []ConfigOp{{Name: "consumer.heartbeat.interval.ms", Value: "6000"}}, true, ""},
		{"streams session", []ConfigOp{{Name: "streams.session.timeout.ms", Value: "50000"}}, true, ""},
		{"streams heartbeat", []ConfigOp{{Name: "streams.heartbeat.interval.ms", Value: "6000"}}, true, ""},
		{"streams standby", []ConfigOp{{Name: "streams.num.standby.replicas", Value: "1"}}, true, ""},
		{"streams standby 3", []ConfigOp{{Name: "streams.num.standby.replicas", Value: "3"}}, false, "streams.num.standby.replicas must be less than or equal to 2"},
		{"streams delay", []ConfigOp{{Name: "streams.initial.rebalance.delay.ms", Value: "0"}}, true, ""},
		{"unknown name", []ConfigOp{{Name: "share.max.size", Value: "10"}}, false, "Unknown group config name"},
		{"delete unknown name", []ConfigOp{{Name: "bogus", Delete: true}}, false, "Unknown group config name"},
		{"delete known", []ConfigOp{{Name: "share.session.timeout.ms", Delete: true}}, true, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewConfigStore(DefaultShareConfig())
			err := s.Alter("g", tc.ops, false)
			if tc.valid {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("got %v, want ErrInvalidConfig mentioning %q", err, tc.msg)
			}
			for _, e := range s.Describe("g") {
				if !e.IsDefault {
					t.Fatalf("rejected alter stored %s", e.Name)
				}
			}
		})
	}
}

// TestGroupConfigSessionAboveHeartbeat checks the rule across the merged
// set, with broker bounds wide enough for the rule to matter.
func TestGroupConfigSessionAboveHeartbeat(t *testing.T) {
	b := DefaultShareConfig()
	b.MinSessionTimeoutMs, b.MaxHeartbeatIntervalMs = 6000, 20000
	s := NewConfigStore(b)
	if err := s.Alter("g", []ConfigOp{{Name: "share.heartbeat.interval.ms", Value: "10000"}}, false); err != nil {
		t.Fatal(err)
	}
	err := s.Alter("g", []ConfigOp{{Name: "share.session.timeout.ms", Value: "10000"}}, false)
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "must be greater than share.heartbeat.interval.ms") {
		t.Fatalf("got %v", err)
	}
	if err := s.Alter("g", []ConfigOp{{Name: "share.session.timeout.ms", Value: "10001"}}, false); err != nil {
		t.Fatal(err)
	}
	// Lowering the heartbeat override back to the default keeps the rule.
	if err := s.Alter("g", []ConfigOp{{Name: "share.heartbeat.interval.ms", Delete: true}}, false); err != nil {
		t.Fatal(err)
	}
}

func TestGroupConfigDescribeAndEffective(t *testing.T) {
	s := NewConfigStore(DefaultShareConfig())
	if err := s.Alter("", nil, false); !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("empty name: %v", err)
	}
	names := GroupConfigNames()
	if len(names) != 22 { // 16, and KAFKA-20251's six (group-config-release)
		t.Fatalf("%d names: %v", len(names), names)
	}
	def := s.Share("g")
	wantDef := ShareGroupConfig{
		AutoOffsetReset:         OffsetReset{Kind: ResetLatest},
		IsolationLevel:          ReadUncommitted,
		RecordLockDuration:      30 * time.Second,
		SessionTimeout:          45 * time.Second,
		HeartbeatInterval:       5 * time.Second,
		DeliveryCountLimit:      5,
		PartitionMaxRecordLocks: 2000,
		RenewAcknowledgeEnable:  true,
	}
	if def != wantDef {
		t.Fatalf("defaults %+v", def)
	}
	if err := s.Alter("g", []ConfigOp{{Name: "share.auto.offset.reset", Value: "by_duration:PT1H"}}, true); err != nil {
		t.Fatal(err)
	}
	if s.Share("g") != wantDef {
		t.Fatal("validateOnly stored a value")
	}
	ops := []ConfigOp{
		{Name: "share.auto.offset.reset", Value: "by_duration:PT1H"},
		{Name: "share.isolation.level", Value: "read_committed"},
		{Name: "share.record.lock.duration.ms", Value: "20000"},
		{Name: "share.session.timeout.ms", Value: "50000"},
		{Name: "share.heartbeat.interval.ms", Value: "6000"},
		{Name: "share.delivery.count.limit", Value: "3"},
		{Name: "share.partition.max.record.locks", Value: "500"},
		{Name: "share.renew.acknowledge.enable", Value: "false"},
	}
	if err := s.Alter("g", ops, false); err != nil {
		t.Fatal(err)
	}
	got := s.Share("g")
	want := ShareGroupConfig{
		AutoOffsetReset:         OffsetReset{Kind: ResetByDuration, Duration: time.Hour},
		IsolationLevel:          ReadCommitted,
		RecordLockDuration:      20 * time.Second,
		SessionTimeout:          50 * time.Second,
		HeartbeatInterval:       6 * time.Second,
		DeliveryCountLimit:      3,
		PartitionMaxRecordLocks: 500,
	}
	if got != want {
		t.Fatalf("effective %+v", got)
	}
	entries := s.Describe("g")
	if len(entries) != len(names) {
		t.Fatalf("%d entries", len(entries))
	}
	overridden := 0
	for i, e := range entries {
		if e.Name != names[i] {
			t.Fatalf("entry %d is %s, want %s", i, e.Name, names[i])
		}
		if !e.IsDefault {
			overridden++
		}
		if e.Name == "consumer.session.timeout.ms" && (e.Value != "45000" || !e.IsDefault) {
			t.Fatalf("consumer default %+v", e)
		}
	}
	if overridden != len(ops) {
		t.Fatalf("%d overrides shown", overridden)
	}
	if err := s.Replace("g", map[string]string{"share.delivery.count.limit": "4"}, false); err != nil {
		t.Fatal(err)
	}
	if c := s.Share("g"); c.DeliveryCountLimit != 4 || c.SessionTimeout != 45*time.Second {
		t.Fatalf("after Replace %+v", c)
	}
	s.Forget("g")
	if s.Share("g") != wantDef {
		t.Fatal("Forget kept overrides")
	}
}

// TestGroupConfigReleaseKept: group-config-release. An override of a
// Kafka 4.3 config kept from a 4.4 run (a data directory restored) is
// neither described nor applied under 4.2, which has no such config, and
// a name 4.2 lacks is refused there as unknown.
func TestGroupConfigReleaseKept(t *testing.T) {
	s := NewConfigStore(DefaultShareConfig())
	s.Restore("g", map[string]string{"share.renew.acknowledge.enable": "false", "share.delivery.count.limit": "3"})
	if c := s.Share("g"); c.RenewAcknowledgeEnable || c.DeliveryCountLimit != 3 {
		t.Fatalf("under the newest release: %+v", c)
	}
	s.SetRelease("4.2")
	if c := s.Share("g"); !c.RenewAcknowledgeEnable || c.DeliveryCountLimit != DefaultShareConfig().DeliveryCountLimit {
		t.Fatalf("under 4.2 the 4.3 overrides applied: %+v", c)
	}
	for _, e := range s.Describe("g") {
		if e.Name == "share.renew.acknowledge.enable" || e.Name == "share.delivery.count.limit" {
			t.Errorf("4.2 describes %s", e.Name)
		}
	}
	if err := s.Replace("h", map[string]string{"share.assignment.interval.ms": "0"}, false); !errors.Is(err, ErrInvalidConfig) ||
		err.Error() != "Unknown group config name: share.assignment.interval.ms" {
		t.Fatalf("a 4.3 name under 4.2: %v", err)
	}
}
