package broker_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/broker"
	"github.com/sharebroker/sharebroker/internal/testbroker"
	"github.com/sharebroker/sharebroker/seed"
)

// The seed given at start (docs/seeding.md), checked through the Kafka
// APIs a client describes the state with, over a socket.

// seedFlags is one item of each kind, as the command's flags give them.
var seedFlags = broker.SeedFlags{
	Topics:       []string{"orders:3:retention.ms=60000,cleanup.policy=[compact,delete]", "audit::max.message.bytes=2048"},
	GroupConfigs: []string{"workers:share.auto.offset.reset=earliest,share.record.lock.duration.ms=15000"},
	SCRAMUsers:   []string{"SCRAM-SHA-512=[name=alice,password=alice-secret,iterations=8192]"},
	ACLs:         []string{"allow-principal=User:alice,operation=Read,topic=orders-,resource-pattern-type=prefixed;deny-principal=User:bob,operation=Write,topic=orders,deny-host=10.0.0.1"},
}

// seededConfig starts from the flags above with authorization on and the
// anonymous PLAINTEXT principal a super user, so it may describe it all.
func seededConfig(t *testing.T) broker.Config {
	t.Helper()
	s, err := broker.SeedFromFlags(seedFlags)
	if err != nil {
		t.Fatal(err)
	}
	return broker.Config{Seed: s, Props: map[string]string{
		"authorizer.class.name": standardAuthorizer,
		"super.users":           "User:ANONYMOUS",
		"num.partitions":        "2",
	}}
}

// seed-before-listen, with kgo/kadm: Metadata, DescribeConfigs (TOPIC and
// GROUP), DescribeAcls and DescribeUserScramCredentials answer the seeded
// state on the first connection.
func TestSeedAnswersKadm(t *testing.T) {
	_, addr := startBroker(t, seededConfig(t))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	topics, err := adm.ListTopics(ctx, "orders", "audit")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(topics["orders"].Partitions); n != 3 {
		t.Errorf("orders has %d partitions, want 3", n)
	}
	if n := len(topics["audit"].Partitions); n != 2 {
		t.Errorf("audit has %d partitions, want num.partitions=2", n)
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, "orders", "audit")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]string{
		"orders": {"retention.ms": "60000", "cleanup.policy": "compact,delete"},
		"audit":  {"max.message.bytes": "2048"},
	}
	for _, rc := range rcs {
		for _, c := range rc.Configs {
			if w, ok := want[rc.Name][c.Key]; ok {
				if c.MaybeValue() != w || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
					t.Errorf("%s %s = %q (source %v), want %q set on the topic", rc.Name, c.Key, c.MaybeValue(), c.Source, w)
				}
				delete(want[rc.Name], c.Key)
			}
		}
	}
	for topic, left := range want {
		if len(left) > 0 {
			t.Errorf("%s: configs %v not described", topic, left)
		}
	}

	groupCfg := describeGroupConfigs(t, ctx, cl, "workers")
	if groupCfg["share.auto.offset.reset"] != "earliest" || groupCfg["share.record.lock.duration.ms"] != "15000" {
		t.Errorf("group workers configs %v, want the seeded ones", groupCfg)
	}

	acls, err := adm.DescribeACLs(ctx, kadm.NewACLs().AnyResource().ResourcePatternType(kadm.ACLPatternAny).
		Operations(kadm.OpAny).Allow().Deny().AllowHosts().DenyHosts())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range acls {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		for _, d := range r.Described {
			got = append(got, strings.Join([]string{d.Principal, d.Host, d.Operation.String(), d.Permission.String(), d.Type.String(), d.Name, d.Pattern.String()}, " "))
		}
	}
	slices.Sort(got)
	wantACLs := []string{
		"User:alice * READ ALLOW TOPIC orders- PREFIXED",
		"User:bob 10.0.0.1 WRITE DENY TOPIC orders LITERAL",
	}
	if !slices.Equal(got, wantACLs) {
		t.Errorf("ACLs\n%v\nwant\n%v", got, wantACLs)
	}

	users, err := adm.DescribeUserSCRAMs(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	alice := users["alice"]
	if alice.Err != nil || len(alice.CredInfos) != 1 || alice.CredInfos[0].Mechanism != kadm.ScramSha512 || alice.CredInfos[0].Iterations != 8192 {
		t.Errorf("alice: %+v, want one SCRAM-SHA-512 credential of 8192 iterations", alice)
	}
}

// describeGroupConfigs asks DescribeConfigs for a GROUP resource (type
// 32) and returns the values it lists.
func describeGroupConfigs(t *testing.T, ctx context.Context, cl *kgo.Client, group string) map[string]string {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]string)
	for _, r := range resp.Resources {
		if r.ErrorCode != 0 {
			t.Fatalf("describe group %s: error %d", group, r.ErrorCode)
		}
		for _, c := range r.Configs {
			if c.Value != nil {
				out[c.Name] = *c.Value
			}
		}
	}
	return out
}

// seed-before-listen, with a client that is not franz-go's: sarama's
// ClusterAdmin sees the same topics, configs, ACLs and SCRAM user.
func TestSeedAnswersSarama(t *testing.T) {
	_, addr := startBroker(t, seededConfig(t))
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_9_0_0
	cfg.Net.DialTimeout, cfg.Net.ReadTimeout, cfg.Net.WriteTimeout = 10*time.Second, 10*time.Second, 10*time.Second
	adm, err := sarama.NewClusterAdmin([]string{addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	md, err := adm.DescribeTopics([]string{"orders"})
	if err != nil || len(md) != 1 || md[0].Err != sarama.ErrNoError || len(md[0].Partitions) != 3 {
		t.Fatalf("orders: %v %+v, want 3 partitions", err, md)
	}
	results, err := adm.DescribeConfigs([]*sarama.ConfigResource{{Type: sarama.TopicResource, Name: "orders"}}, sarama.DescribeConfigsOptions{})
	if err != nil || len(results) != 1 || results[0].ErrorCode != sarama.ErrNoError {
		t.Fatalf("describe orders' configs: %v %+v", err, results)
	}
	var retention string
	for _, e := range results[0].Configs {
		if e.Name == "retention.ms" {
			retention = e.Value
		}
	}
	if retention != "60000" {
		t.Errorf("orders retention.ms = %q, want 60000", retention)
	}
	acls, err := adm.ListAcls(sarama.AclFilter{ResourceType: sarama.AclResourceAny, ResourcePatternTypeFilter: sarama.AclPatternAny,
		Operation: sarama.AclOperationAny, PermissionType: sarama.AclPermissionAny})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range acls {
		n += len(r.Acls)
	}
	if n != 2 {
		t.Errorf("sarama lists %d ACLs, want the 2 seeded: %+v", n, acls)
	}
	users, err := adm.DescribeUserScramCredentials([]string{"alice"})
	if err != nil || len(users) != 1 || users[0].ErrorCode != sarama.ErrNoError || len(users[0].CredentialInfos) != 1 ||
		users[0].CredentialInfos[0].Mechanism != sarama.SCRAM_MECHANISM_SHA_512 {
		t.Fatalf("alice: %v %+v, want one SCRAM-SHA-512 credential", err, users)
	}
}

// seed-before-listen: while the seed is being applied the Kafka listener
// is not bound and /readyz answers 503; once Start returns it answers
// 200. The hook holds the seed, so nothing here depends on timing.
func TestSeedReadyzBeforeSeed(t *testing.T) {
	cfg := seededConfig(t)
	cfg.Listen, cfg.HTTP = "127.0.0.1:0", "127.0.0.1:0"
	b, err := broker.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = testbroker.Close(b) })
	held, release := make(chan struct{}), make(chan struct{})
	broker.SetBeforeSeed(b, func() {
		close(held)
		<-release
	})
	started := make(chan error, 1)
	go func() { started <- b.Start() }()
	select {
	case <-held:
	case err := <-started:
		t.Fatalf("Start returned %v without applying the seed", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the seed hook did not run within 10 s")
	}
	readyz := "http://" + b.HTTPAddr().String() + "/readyz"
	if code := httpStatus(t, readyz); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz while seeding: %d, want 503", code)
	}
	if a := b.Addr(); a != nil {
		t.Errorf("Kafka listener bound at %v while seeding; want none before the seed is applied", a)
	}
	close(release)
	select {
	case err := <-started:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Start did not return within 10 s of the seed's release")
	}
	if code := httpStatus(t, readyz); code != http.StatusOK {
		t.Errorf("/readyz after seeding: %d, want 200", code)
	}
}

func httpStatus(t *testing.T, url string) int {
	t.Helper()
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// seed-idempotent: a second start on the data directory with the same
// seed makes nothing and keeps what is there (the topic's ID and records,
// the group config); seed-conflict: one with a different partition count
// refuses to start, naming the topic, and changes nothing.
func TestSeedRestartOnDataDir(t *testing.T) {
	dir := t.TempDir()
	cfg := seededConfig(t)
	cfg.DataDir = dir
	b := testbroker.Start(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr().String()), kgo.DefaultProduceTopic("orders"))
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("kept")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	firstID := topicID(t, ctx, b.Addr().String(), "orders")
	if err := testbroker.Close(b); err != nil {
		t.Fatal(err)
	}

	again := testbroker.Start(t, cfg)
	addr := again.Addr().String()
	if id := topicID(t, ctx, addr, "orders"); id != firstID {
		t.Errorf("orders' topic ID changed across the restart: %x, then %x", firstID, id)
	}
	adm := kadm.NewClient(mustClient(t, addr))
	ends, err := adm.ListEndOffsets(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	var records int64
	ends.Each(func(o kadm.ListedOffset) { records += o.Offset })
	if records != 1 {
		t.Errorf("orders holds %d records after the restart, want the 1 produced", records)
	}
	if err := testbroker.Close(again); err != nil {
		t.Fatal(err)
	}

	conflict := cfg
	conflict.Seed.Topics = slices.Clone(cfg.Seed.Topics)
	conflict.Seed.Topics[0].Partitions = 6
	nb, err := broker.New(conflict)
	if err != nil {
		t.Fatal(err)
	}
	err = nb.Start()
	_ = testbroker.Close(nb)
	if !errors.Is(err, seed.ErrConflict) || !strings.Contains(err.Error(), `topic "orders"`) || !strings.Contains(err.Error(), "3 partitions, not 6") {
		t.Fatalf("start with orders at 6 partitions: %v; want a seed conflict naming the topic and both counts", err)
	}
	third := testbroker.Start(t, cfg)
	if n := len(mustTopics(t, ctx, third.Addr().String())["orders"].Partitions); n != 3 {
		t.Errorf("orders has %d partitions after the refused start, want 3", n)
	}
}

func mustClient(t *testing.T, addr string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func mustTopics(t *testing.T, ctx context.Context, addr string) kadm.TopicDetails {
	t.Helper()
	td, err := kadm.NewClient(mustClient(t, addr)).ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return td
}

func topicID(t *testing.T, ctx context.Context, addr, topic string) kadm.TopicID {
	t.Helper()
	return mustTopics(t, ctx, addr)[topic].ID
}

// seed-before-listen with --nodes: the seed is the cluster's, so every
// node answers it, and the seeded topic's partitions are led across the
// nodes.
func TestSeedNodes(t *testing.T) {
	cfg := seededConfig(t)
	cfg.Nodes = 3
	b := testbroker.Start(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	leaders := make(map[int32]bool)
	for _, a := range b.NodeAddrs() {
		cl, err := kgo.NewClient(kgo.SeedBrokers(a.String()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr("orders")
		req.Topics = append(req.Topics, rt)
		// Asked of this node itself, not whichever the client picks.
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 || len(resp.Topics[0].Partitions) != 3 {
			t.Fatalf("node at %s: Metadata of orders %+v, want 3 partitions", a, resp.Topics)
		}
		for _, p := range resp.Topics[0].Partitions {
			leaders[p.Leader] = true
		}
		if cfgs := describeGroupConfigs(t, ctx, cl, "workers"); cfgs["share.auto.offset.reset"] != "earliest" {
			t.Errorf("node at %s: workers' share.auto.offset.reset = %q, want earliest", a, cfgs["share.auto.offset.reset"])
		}
	}
	if len(leaders) < 2 {
		t.Errorf("orders' 3 partitions are led by %v; want them across the 3 nodes", leaders)
	}
}

// seed-validated and seed-repeats: the seed's bad items stop Start naming
// the item, before any listener binds: a topic config the
// broker does not know, a partition count CreateTopics refuses, a GROUP
// config IncrementalAlterConfigs refuses, ACLs without an authorizer, a
// SCRAM user AlterUserScramCredentials would refuse.
func TestSeedBadItemsRefused(t *testing.T) {
	cases := []struct {
		name string
		seed broker.Seed
		off  bool // authorization off
		want []string
	}{
		{"unknown topic config", broker.Seed{Topics: []seed.Topic{{Name: "t", Partitions: 1, Configs: map[string]string{"retention.mss": "1"}}}},
			false, []string{`topic "t"`, "unknown topic config name: retention.mss"}},
		{"zero partitions", broker.Seed{Topics: []seed.Topic{{Name: "t", Partitions: 0}}}, false, []string{`topic "t"`, "invalid number of partitions"}},
		{"bad topic name", broker.Seed{Topics: []seed.Topic{{Name: "a/b", Partitions: 1}}}, false, []string{`topic "a/b"`, "invalid topic name"}},
		{"too many partitions", broker.Seed{Topics: []seed.Topic{{Name: "a", Partitions: 6000}, {Name: "b", Partitions: 6000}}},
			false, []string{`topic "b"`, "Excessively large number of partitions per request."}},
		{"bad group config value", broker.Seed{GroupConfigs: []seed.GroupConfig{{Group: "g", Configs: map[string]string{"share.auto.offset.reset": "middle"}}}},
			false, []string{`group "g"`, "share.auto.offset.reset"}},
		// group-config-exact: seeding checks as IncrementalAlterConfigs does.
		{"upper-case group config keyword", broker.Seed{GroupConfigs: []seed.GroupConfig{{Group: "g", Configs: map[string]string{"share.auto.offset.reset": "EARLIEST"}}}},
			false, []string{`group "g"`, "Invalid value EARLIEST for configuration share.auto.offset.reset"}},
		{"unknown group config", broker.Seed{GroupConfigs: []seed.GroupConfig{{Group: "g", Configs: map[string]string{"share.nope": "1"}}}},
			false, []string{`group "g"`, "Unknown group config name: share.nope"}},
		{"ACL without authorizer", broker.Seed{ACLs: []seed.ACL{{Principal: "User:a", Operation: "READ", ResourceType: "TOPIC", ResourceName: "t"}}},
			true, []string{"ACL ALLOW READ on TOPIC", "No Authorizer is configured"}},
		{"ACL without principal type", broker.Seed{ACLs: []seed.ACL{{Principal: "alice", Operation: "READ", ResourceType: "TOPIC", ResourceName: "t"}}},
			false, []string{"for alice", "Could not parse principal"}},
		{"SCRAM too few iterations", broker.Seed{SCRAMUsers: []seed.SCRAMUser{{Name: "u", Mechanism: "SCRAM-SHA-256", Password: "p", Iterations: 100}}},
			false, []string{`SCRAM user "u"`, "Too few iterations"}},
		{"SCRAM unknown mechanism", broker.Seed{SCRAMUsers: []seed.SCRAMUser{{Name: "u", Mechanism: "SCRAM-SHA-1", Password: "p"}}},
			false, []string{`SCRAM user "u"`, "SCRAM-SHA-1"}},
		{"topic twice", broker.Seed{Topics: []seed.Topic{{Name: "t", Partitions: 1, From: "first"}, {Name: "t", Partitions: 2, From: "second"}}},
			false, []string{`topic "t" is given twice: first and second`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := broker.Config{Listen: "127.0.0.1:0", Seed: tc.seed, Props: map[string]string{"authorizer.class.name": standardAuthorizer}}
			if tc.off {
				cfg.Props = nil
			}
			b, err := broker.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			err = b.Start()
			_ = testbroker.Close(b)
			if err == nil {
				t.Fatal("started; want the seed refused")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if b.Addr() != nil {
				t.Errorf("Kafka listener bound at %v though the seed was refused", b.Addr())
			}
		})
	}
}

// The seed file's ACLs have GET /v1/acls's fields: a list read from one
// broker seeds another with the same ACLs.
func TestSeedACLsFromHTTPListing(t *testing.T) {
	cfg := seededConfig(t)
	cfg.HTTP = "127.0.0.1:0"
	b := testbroker.Start(t, cfg)
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + b.HTTPAddr().String() + "/v1/acls")
	if err != nil {
		t.Fatal(err)
	}
	var listed struct {
		ACLs json.RawMessage `json:"acls"`
	}
	err = json.NewDecoder(resp.Body).Decode(&listed)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	s, err := seed.Parse([]byte(`{"acls": `+string(listed.ACLs)+`}`), "listing")
	if err != nil {
		t.Fatalf("GET /v1/acls as a seed: %v", err)
	}
	if len(s.ACLs) != 2 {
		t.Fatalf("%d ACLs read from the listing, want 2", len(s.ACLs))
	}
	other := testbroker.Start(t, broker.Config{HTTP: "127.0.0.1:0", Seed: s, Props: cfg.Props})
	resp, err = c.Get("http://" + other.HTTPAddr().String() + "/v1/acls")
	if err != nil {
		t.Fatal(err)
	}
	var again struct {
		ACLs json.RawMessage `json:"acls"`
	}
	err = json.NewDecoder(resp.Body).Decode(&again)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if string(again.ACLs) != string(listed.ACLs) {
		t.Errorf("seeded from the listing, the ACLs are\n%s\nwant\n%s", again.ACLs, listed.ACLs)
	}
}
