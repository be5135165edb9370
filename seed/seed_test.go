package seed

import (
	"errors"
	"maps"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/sharebroker/sharebroker/acl"
	"github.com/sharebroker/sharebroker/auth"
	"github.com/sharebroker/sharebroker/group"
	"github.com/sharebroker/sharebroker/storage"
)

// seed-items: --topic's forms, PARTITIONS empty or -1 for num.partitions,
// list values in brackets or quotes.
func TestParseTopic(t *testing.T) {
	for in, want := range map[string]Topic{
		"orders":                 {Name: "orders", Partitions: DefaultPartitions},
		"orders:3":               {Name: "orders", Partitions: 3},
		"orders:-1":              {Name: "orders", Partitions: DefaultPartitions},
		"orders::retention.ms=1": {Name: "orders", Partitions: DefaultPartitions, Configs: map[string]string{"retention.ms": "1"}},
		"orders:2:cleanup.policy=[compact,delete],retention.ms=\"5\"": {Name: "orders", Partitions: 2,
			Configs: map[string]string{"cleanup.policy": "compact,delete", "retention.ms": "5"}},
	} {
		got, err := ParseTopic(in)
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		got.From = ""
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q: %+v, want %+v", in, got, want)
		}
	}
	for _, bad := range []string{"", ":3", "orders:x", "orders:1:retention.ms", "orders:1:a=1,a=2", "orders:1:=1"} {
		if _, err := ParseTopic(bad); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
}

// seed-items: the group ID ends at the last colon before the first equals
// sign.
func TestParseGroupConfig(t *testing.T) {
	for in, want := range map[string]GroupConfig{
		"workers:share.auto.offset.reset=earliest": {Group: "workers", Configs: map[string]string{"share.auto.offset.reset": "earliest"}},
		"a:b:share.auto.offset.reset=by_duration:PT1H,share.delivery.count.limit=3": {Group: "a:b",
			Configs: map[string]string{"share.auto.offset.reset": "by_duration:PT1H", "share.delivery.count.limit": "3"}},
	} {
		got, err := ParseGroupConfig(in)
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		got.From = ""
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q: %+v, want %+v", in, got, want)
		}
	}
	for _, bad := range []string{"workers", "workers:", ":a=b", "=b", "workers:a"} {
		if _, err := ParseGroupConfig(bad); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
}

// seed-items: kafka-storage --add-scram's form; errors never show the
// password.
func TestParseSCRAMUser(t *testing.T) {
	got, err := ParseSCRAMUser(`SCRAM-SHA-512=[name=alice,password="a,b=c",iterations=8192]`)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "alice" || got.Mechanism != "SCRAM-SHA-512" || got.Password != "a,b=c" || got.Iterations != 8192 {
		t.Fatalf("%+v", got)
	}
	for _, bad := range []string{"alice:pw", "SCRAM-SHA-256=name=alice", "SCRAM-SHA-256=[password=x]", "SCRAM-SHA-256=[name=a]",
		"SCRAM-SHA-256=[name=a,password=x,iterations=many]", "SCRAM-SHA-256=[name=a,password=x,colour=red]"} {
		u, err := ParseSCRAMUser(bad)
		if err == nil {
			t.Errorf("%q: accepted", bad)
		} else if u.Password != "" && strings.Contains(err.Error(), u.Password) {
			t.Errorf("%q: error shows the password: %v", bad, err)
		}
	}
}

// seed-items: an --acl item is kafka-acls.sh's options without their
// dashes; one item is one ACL.
func TestParseACL(t *testing.T) {
	for in, want := range map[string]acl.Binding{
		"allow-principal=User:alice,operation=Read,topic=orders": {ResourceType: acl.ResourceTopic, ResourceName: "orders",
			PatternType: acl.PatternLiteral, Principal: "User:alice", Host: "*", Operation: acl.OpRead, Permission: acl.Allow},
		"deny-principal=User:bob,deny-host=10.0.0.1,operation=DescribeConfigs,group=g-,resource-pattern-type=prefixed": {
			ResourceType: acl.ResourceGroup, ResourceName: "g-", PatternType: acl.PatternPrefixed, Principal: "User:bob",
			Host: "10.0.0.1", Operation: acl.OpDescribeConfigs, Permission: acl.Deny},
		"allow-principal=User:ops,operation=ALTER,cluster": {ResourceType: acl.ResourceCluster, ResourceName: acl.ClusterName,
			PatternType: acl.PatternLiteral, Principal: "User:ops", Host: "*", Operation: acl.OpAlter, Permission: acl.Allow},
		`allow-principal="User:CN=alice,O=org",operation=Write,transactional-id=tx`: {ResourceType: acl.ResourceTransactionalID,
			ResourceName: "tx", PatternType: acl.PatternLiteral, Principal: "User:CN=alice,O=org", Host: "*", Operation: acl.OpWrite, Permission: acl.Allow},
	} {
		a, err := ParseACL(in)
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		got, err := a.Binding()
		if err != nil || got != want {
			t.Errorf("%q: %+v %v, want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{
		"operation=Read,topic=t",                                // no principal
		"allow-principal=User:a,topic=t",                        // no operation
		"allow-principal=User:a,operation=Read",                 // no resource
		"allow-principal=User:a,operation=Read,topic=t,group=g", // two resources
		"allow-principal=User:a,deny-principal=User:b,operation=Read,topic=t",
		"allow-principal=User:a,operation=Read,topic=t,deny-host=1.2.3.4",
		"allow-principal=User:a,operation=Any,topic=t", // filters only
		"allow-principal=User:a,operation=Read,topic=t,resource-pattern-type=match",
		"allow-principal=User:a,operation=Read,topic=t,operation=Write",
	} {
		if _, err := ParseACL(bad); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
}

// seed-items: several items in one value, split outside quotes and
// brackets.
func TestSplitItems(t *testing.T) {
	got := SplitItems("a:1; b:2\n\nc:3:k=\"x;y\";d:4:k=[p;q] ;")
	want := []string{"a:1", "b:2", `c:3:k="x;y"`, "d:4:k=[p;q]"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q, want %q", got, want)
	}
}

// The docs' example file is a valid seed, and its items are what the
// docs say.
func TestDocsExampleFile(t *testing.T) {
	s, err := ReadFile("../docs/seed-example.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Topics) != 2 || len(s.GroupConfigs) != 1 || len(s.SCRAMUsers) != 1 || len(s.ACLs) != 2 {
		t.Fatalf("example: %+v", s)
	}
	if s.Topics[0].Configs["retention.ms"] != "86400000" {
		t.Errorf("a number as a config value: %q", s.Topics[0].Configs["retention.ms"])
	}
	if err := Apply(s, newTarget(true)); err != nil {
		t.Fatalf("applying the docs' example: %v", err)
	}
	raw, err := os.ReadFile("../docs/seed-example.json")
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile("../docs/seeding.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), string(raw)) {
		t.Error("docs/seeding.md does not show docs/seed-example.json as it is")
	}
}

func newTarget(authz bool) Target {
	share := group.DefaultShareConfig()
	tg := Target{Store: storage.NewStore(), NumPartitions: 1, GroupConfigs: group.NewConfigStore(share)}
	tg.Credentials, _ = auth.NewCredentials(nil)
	if authz {
		tg.Authorizer = acl.New(acl.Config{})
	}
	return tg
}

// seed-validated (validate, then mutate): a seed whose last item is refused makes none of
// the others; seed-idempotent: applying the same seed again makes
// nothing new.
func TestApplyAllOrNothingAndIdempotent(t *testing.T) {
	tg := newTarget(true)
	good := Seed{
		Topics:       []Topic{{Name: "a", Partitions: 2, Configs: map[string]string{"retention.ms": "1000"}}},
		GroupConfigs: []GroupConfig{{Group: "g", Configs: map[string]string{"share.auto.offset.reset": "earliest"}}},
		SCRAMUsers:   []SCRAMUser{{Name: "u", Mechanism: "SCRAM-SHA-256", Password: "pw"}},
		ACLs:         []ACL{{Principal: "User:u", Operation: "READ", ResourceType: "TOPIC", ResourceName: "a"}},
	}
	bad := good
	bad.SCRAMUsers = append([]SCRAMUser{}, good.SCRAMUsers...)
	bad.SCRAMUsers = append(bad.SCRAMUsers, SCRAMUser{Name: "v", Mechanism: "SCRAM-SHA-256", Password: "pw", Iterations: 1})
	if err := Apply(bad, tg); err == nil || !strings.Contains(err.Error(), `SCRAM user "v"`) {
		t.Fatalf("bad seed: %v", err)
	}
	if tg.Store.Topic("a") != nil || len(tg.Authorizer.List()) != 0 {
		t.Fatal("a refused seed made some of its items")
	}
	if _, ok := tg.Credentials.LookupSCRAM("u", auth.SCRAMSHA256); ok {
		t.Fatal("a refused seed made its SCRAM user")
	}
	if err := Apply(good, tg); err != nil {
		t.Fatal(err)
	}
	id := tg.Store.Topic("a").ID
	if err := Apply(good, tg); err != nil {
		t.Fatalf("the same seed again: %v", err)
	}
	if tg.Store.Topic("a").ID != id || len(tg.Authorizer.List()) != 1 {
		t.Fatal("the same seed again changed the state")
	}
	// A topic override the seed does not name is the topic's own.
	_ = tg.Store.Topic("a").UpdateConfigs(func(c map[string]string) (map[string]string, error) {
		c["max.message.bytes"] = "2048"
		return c, nil
	})
	if err := Apply(good, tg); err != nil {
		t.Fatalf("with an override the seed does not name: %v", err)
	}
	changed := good
	changed.Topics = []Topic{{Name: "a", Partitions: 2, Configs: map[string]string{"retention.ms": "2000"}}}
	if err := Apply(changed, tg); !errors.Is(err, ErrConflict) || !errors.Is(err, storage.ErrTopicExists) {
		t.Fatalf("another retention.ms: %v, want a conflict", err)
	}
	if got := tg.Store.Topic("a").Configs(); !maps.Equal(got, map[string]string{"retention.ms": "1000", "max.message.bytes": "2048"}) {
		t.Fatalf("configs after the refused seed: %v", got)
	}
}

// seed-validated: a group's items are checked as one set, so a session
// timeout and the heartbeat interval it must exceed may come apart.
func TestApplyGroupItemsTogether(t *testing.T) {
	tg := newTarget(false)
	// Bounds that let a session timeout fall below a heartbeat interval.
	share := group.DefaultShareConfig()
	share.MinSessionTimeoutMs = 1000
	tg.GroupConfigs = group.NewConfigStore(share)
	s := Seed{GroupConfigs: []GroupConfig{
		{Group: "g", Configs: map[string]string{"share.heartbeat.interval.ms": "10000"}, From: "one"},
		{Group: "g", Configs: map[string]string{"share.session.timeout.ms": "12000"}, From: "two"},
	}}
	if err := Apply(s, tg); err != nil {
		t.Fatal(err)
	}
	cfg := tg.GroupConfigs.Share("g")
	if cfg.HeartbeatInterval.Milliseconds() != 10000 || cfg.SessionTimeout.Milliseconds() != 12000 {
		t.Fatalf("g: %+v", cfg)
	}
	bad := Seed{GroupConfigs: []GroupConfig{
		{Group: "h", Configs: map[string]string{"share.heartbeat.interval.ms": "10000"}, From: "one"},
		{Group: "h", Configs: map[string]string{"share.session.timeout.ms": "8000"}, From: "two"},
	}}
	if err := Apply(bad, tg); err == nil || !strings.Contains(err.Error(), "one; two") {
		t.Fatalf("a session timeout below the heartbeat in two items: %v, want both named", err)
	}
	if got := tg.GroupConfigs.Share("h").HeartbeatInterval.Milliseconds(); got == 10000 {
		t.Fatal("the refused items set the heartbeat")
	}
}
