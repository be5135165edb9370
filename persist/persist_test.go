package persist

import (
	"io"
	"log/slog"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/sharebroker/sharebroker/acl"
	"github.com/sharebroker/sharebroker/durable"
	"github.com/sharebroker/sharebroker/group"
	"github.com/sharebroker/sharebroker/locktimer"
	"github.com/sharebroker/sharebroker/sharepartition"
	"github.com/sharebroker/sharebroker/storage"
	"github.com/sharebroker/sharebroker/txn"
)

// fakeShares and fakeCredentials stand in for shareserve and the SASL
// credentials; calls records what the binding asked of them, in order.
type fakeShares struct {
	calls    *[]string
	journal  ShareJournal
	restored map[durable.ShareKey]sharepartition.Persisted
}

func (f *fakeShares) SetShareJournal(j ShareJournal) {
	*f.calls = append(*f.calls, "share journal")
	f.journal = j
}

func (f *fakeShares) Restore(groupID string, t *storage.Topic, log *storage.Partition, st sharepartition.Persisted) error {
	*f.calls = append(*f.calls, "share restore")
	f.restored[durable.ShareKey{Group: groupID, TopicID: t.ID, Partition: log.Index}] = st
	return nil
}

type fakeCredentials struct {
	calls    *[]string
	journal  func(durable.SCRAMKey, *durable.SCRAMCredential)
	restored map[durable.SCRAMKey]*durable.SCRAMCredential
}

func (f *fakeCredentials) RestoreSCRAM(k durable.SCRAMKey, c *durable.SCRAMCredential) {
	*f.calls = append(*f.calls, "scram restore")
	f.restored[k] = c
}

func (f *fakeCredentials) SetSCRAMJournal(j func(durable.SCRAMKey, *durable.SCRAMCredential)) {
	*f.calls = append(*f.calls, "scram journal")
	f.journal = j
}

type node struct {
	*Binding
	st     State
	calls  []string
	shares *fakeShares
	creds  *fakeCredentials
}

// start binds fresh domain state to dir and recovers it, as a broker's
// New and Start do.
func start(t *testing.T, dir string) *node {
	t.Helper()
	clock := locktimer.NewManualClock(time.UnixMilli(1_700_000_000_000))
	topics := func(string) (group.TopicInfo, bool) { return group.TopicInfo{}, false }
	n := &node{}
	registry := group.NewRegistry()
	configs := group.NewGroupConfigStore(group.DefaultShareConfig(), group.DefaultConsumerConfig())
	shareGroups, err := group.NewShareGroups(group.ShareOptions{Clock: clock, Broker: group.DefaultShareConfig(),
		Configs: configs, Registry: registry, Topics: topics})
	if err != nil {
		t.Fatal(err)
	}
	classic, err := group.NewClassicGroups(group.ClassicOptions{Clock: clock, Config: group.DefaultClassicConfig(),
		Registry: registry, Topics: topics})
	if err != nil {
		t.Fatal(err)
	}
	consumer, err := group.NewConsumerGroups(group.ConsumerOptions{Clock: clock, Config: group.DefaultConsumerConfig(),
		Configs: configs, Registry: registry, Topics: topics, ListTopics: func() []string { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	n.shares = &fakeShares{calls: &n.calls, restored: map[durable.ShareKey]sharepartition.Persisted{}}
	n.creds = &fakeCredentials{calls: &n.calls, restored: map[durable.SCRAMKey]*durable.SCRAMCredential{}}
	n.st = State{
		Store:          storage.NewStore(),
		GroupConfigs:   configs,
		ClassicGroups:  classic,
		ConsumerGroups: consumer,
		ShareGroups:    shareGroups,
		Shares:         n.shares,
		Authz:          acl.New(acl.Config{}),
		Credentials:    n.creds,
	}
	n.st.Txns = txn.New(txn.Config{Clock: clock, MaxTimeout: time.Minute, CleanupInterval: time.Hour, IDExpiration: time.Hour,
		NewProducerID: func() int64 { return n.NewProducerID() }, Complete: func(txn.Completion) {}})
	n.Binding = New(Config{Dir: dir, CompactEvery: 1000, TopicDefault: func(string) string { return "" },
		Clock: clock, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, n.st)
	if err := n.Recover(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		n.st.Txns.Close()
		shareGroups.Close()
		classic.Close()
		consumer.Close()
		n.Close()
	})
	return n
}

// TestRestartWithoutBroker writes through each journal the binding sets
// and reads everything back in a second binding of the same directory,
// in the order docs/durability.md gives, with no broker and no socket.
func TestRestartWithoutBroker(t *testing.T) {
	dir := t.TempDir()
	first := start(t, dir)
	if id := first.NewProducerID(); id != 0 {
		t.Fatalf("first producer ID %d, want 0", id)
	}
	tp, err := first.st.Store.CreateTopic("t", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	binding := acl.Binding{ResourceType: acl.ResourceTopic, ResourceName: "t", PatternType: acl.PatternLiteral,
		Principal: "User:alice", Host: "*", Operation: acl.OpRead, Permission: acl.Allow}
	if errs := first.st.Authz.Create([]acl.Binding{binding}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	scram := durable.SCRAMKey{User: "alice", Mechanism: 1}
	first.creds.journal(scram, &durable.SCRAMCredential{Salt: []byte("s"), StoredKey: []byte("k"), ServerKey: []byte("v"), Iterations: 4096})
	share := durable.ShareKey{Group: "sg", TopicID: tp.ID, Partition: 0}
	kept := sharepartition.Persisted{SPSO: 3, StateEpoch: 1, Batches: []sharepartition.PersistedBatch{}}
	first.shares.journal.SharePersisted(share, sharepartition.Persisted{Snapshot: true, SPSO: 3, StateEpoch: 1})
	first.st.Txns.Close()
	first.Close()

	second := start(t, dir)
	if want := []string{"share journal", "share restore", "scram restore", "scram journal"}; !slices.Equal(second.calls, want) {
		t.Errorf("restored in the order %q, want %q", second.calls, want)
	}
	if id := second.NewProducerID(); id != producerIDBlock {
		t.Errorf("producer ID after a restart %d, want %d, past the block reserved (producer-ids-reserved)", id, producerIDBlock)
	}
	if got := second.st.Authz.List(); !reflect.DeepEqual(got, []acl.Binding{binding}) {
		t.Errorf("ACLs kept %+v, want %+v (acls-kept)", got, binding)
	}
	if c := second.creds.restored[scram]; c == nil || c.Iterations != 4096 {
		t.Errorf("SCRAM credential kept %+v (scram-kept)", c)
	}
	if got := second.shares.restored[share]; !reflect.DeepEqual(got, kept) {
		t.Errorf("share state kept %+v, want %+v (share-state-as-kafka)", got, kept)
	}
	if err := second.st.ShareGroups.RequireEmpty("sg", false); err != nil {
		t.Errorf("the share group of kept state does not exist: %v", err)
	}
}
