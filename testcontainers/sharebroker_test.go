package sharebroker_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/network"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	sharebroker "github.com/sharebroker/sharebroker/testcontainers"
)

// Bad options fail before anything reaches Docker: no image is needed.
func TestRunRejectsBadOptions(t *testing.T) {
	for name, opt := range map[string]sharebroker.Option{
		"nodes 0":          sharebroker.WithNodes(0),
		"sasl name colon":  sharebroker.WithSASLUser("a:b", "pw"),
		"advertise port":   sharebroker.WithAdvertisedHost("host:1"),
		"config equals":    sharebroker.WithConfig(map[string]string{"a=b": "c"}),
		"args serve again": sharebroker.WithArgs("serve"),
		"env name equals":  sharebroker.WithEnv(map[string]string{"A=B": "c"}),
		"topic 0 parts":    sharebroker.WithTopic("t", 0, nil),
		"topic colon":      sharebroker.WithTopic("a:b", 1, nil),
		"group no configs": sharebroker.WithGroupConfig("g", nil),
	} {
		ctr, err := sharebroker.Run(context.Background(), "no-such-image:never-pulled", opt)
		if err == nil || ctr != nil || !strings.Contains(err.Error(), "sharebroker option") {
			t.Errorf("%s: Run = %v, %v; want an option error and no container", name, ctr, err)
		}
	}
}

// Produce with kgo, then share-consume every record and accept it, all
// through the container; the ports Run published are the ones advertised.
func TestRunProduceShareConsume(t *testing.T) {
	ctx := testContext(t)
	ctr := run(t, ctx, false)
	const topic, group, n = "tc-queue", "tc-workers", 10
	cl := newClient(t, ctx, ctr, kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic(topic))
	setGroupConfig(t, ctx, cl, group, "share.auto.offset.reset", "earliest")
	for i := range n {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "v%d", i)}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	consumer := newClient(t, ctx, ctr, kgo.ConsumeTopics(topic), kgo.ShareGroup(group))
	seen := map[string]bool{}
	for len(seen) < n && ctx.Err() == nil {
		for _, r := range consumer.PollFetches(ctx).Records() {
			seen[string(r.Value)] = true
			r.Ack(kgo.AckAccept)
		}
	}
	if len(seen) != n {
		t.Fatalf("share-consumed %d distinct records, want %d", len(seen), n)
	}
	if err := consumer.FlushAcks(ctx); err != nil {
		t.Fatalf("flush acks: %v", err)
	}

	// The HTTP address serves /metrics with the token, and not without.
	httpAddr, _ := ctr.HTTPAddress(ctx)
	if code := httpStatus(t, ctx, "http://"+httpAddr+"/metrics", ""); code != http.StatusUnauthorized {
		t.Errorf("/metrics without the token: %d, want 401", code)
	}
	if code := httpStatus(t, ctx, "http://"+httpAddr+"/metrics", ctr.HTTPToken()); code != http.StatusOK {
		t.Errorf("/metrics with the token: %d, want 200", code)
	}
	if ctr.CACertificate() != nil || ctr.TLSConfig() != nil {
		t.Error("a plaintext container reports a CA")
	}
}

// AdvanceClock moves the broker's clock past the acquisition lock
// (group.share.record.lock.duration.ms, 30 s by default): the record a
// consumer held without acknowledging becomes available again and is
// delivered a second time. Without the advance the lock would outlast the
// test's 20 s bound on the redelivery.
func TestAdvanceClockExpiresLock(t *testing.T) {
	ctx := testContext(t)
	ctr := run(t, ctx, false)
	const topic, group = "tc-locks", "tc-lock-workers"
	cl := newClient(t, ctx, ctr, kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic(topic))
	setGroupConfig(t, ctx, cl, group, "share.auto.offset.reset", "earliest")
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("held")}).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	consumer := newClient(t, ctx, ctr, kgo.ConsumeTopics(topic), kgo.ShareGroup(group))
	var first *kgo.Record
	for first == nil && ctx.Err() == nil {
		if recs := consumer.PollFetches(ctx).Records(); len(recs) > 0 {
			first = recs[0]
		}
	}
	if first == nil || first.DeliveryCount() != 1 {
		t.Fatalf("first delivery: %+v", first)
	}
	before, err := ctr.Now(ctx)
	if err != nil {
		t.Fatal(err)
	}
	now, err := ctr.AdvanceClock(ctx, 31*time.Second)
	if err != nil {
		t.Fatalf("advance: %v", err)
	}
	if now.Sub(before) < 31*time.Second || !now.After(first.AcquisitionDeadline()) {
		t.Fatalf("clock %v → %v, lock deadline %v: the advance did not pass the lock", before, now, first.AcquisitionDeadline())
	}
	// The consumer's next poll gets the record again, at delivery 2.
	redeliveryCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var again *kgo.Record
	for again == nil && redeliveryCtx.Err() == nil {
		for _, r := range consumer.PollFetches(redeliveryCtx).Records() {
			if r.Offset == first.Offset {
				again = r
			}
		}
	}
	if again == nil || again.DeliveryCount() != 2 {
		t.Fatalf("redelivery of offset %d within 20 s: %+v", first.Offset, again)
	}
}

// MoveLeader on a three-node container: the answer names the new leader
// at one epoch more, Metadata agrees, and a client produces to the new
// leader without being told.
func TestMoveLeader(t *testing.T) {
	ctx := testContext(t)
	ctr := run(t, ctx, false, sharebroker.WithNodes(3))
	seeds, _ := ctr.Brokers(ctx)
	if len(seeds) != 3 {
		t.Fatalf("brokers %v, want 3", seeds)
	}
	const topic = "tc-moved"
	cl := newClient(t, ctx, ctr, kgo.DefaultProduceTopic(topic))
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, -1, nil, topic); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	before := leaderOf(t, ctx, adm, topic)
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("before")}).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	target := (before.Leader + 1) % 3
	moved, err := ctr.MoveLeader(ctx, topic, 0, target)
	if err != nil {
		t.Fatalf("move leader: %v", err)
	}
	if moved.Leader != target || moved.LeaderEpoch != before.LeaderEpoch+1 {
		t.Fatalf("moved %+v, want leader %d at epoch %d", moved, target, before.LeaderEpoch+1)
	}
	// A new client: kgo answers a Metadata request from its own recent
	// answer for a while.
	fresh := kadm.NewClient(newClient(t, ctx, ctr))
	if after := leaderOf(t, ctx, fresh, topic); after.Leader != target || after.LeaderEpoch != moved.LeaderEpoch {
		t.Fatalf("metadata after the move: %+v, want %+v", after, moved)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatalf("produce after the move: %v", err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup(topic, 0); o.Offset != 2 {
		t.Fatalf("end offset %+v, want 2", o)
	}
	// A move to a node that does not exist changes nothing and says why.
	if _, err := ctr.MoveLeader(ctx, topic, 0, 9); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("move to node 9: %v, want 404", err)
	}
}

func leaderOf(t *testing.T, ctx context.Context, adm *kadm.Client, topic string) sharebroker.Leadership {
	t.Helper()
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	p := md.Topics[topic].Partitions[0]
	return sharebroker.Leadership{Topic: topic, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch}
}

// WithTLS and WithSASLUser make the listener SASL_SSL: the CA Run read
// from the broker verifies its certificate for the advertised host, and
// SCRAM-SHA-512 authenticates the user.
func TestRunTLSAndSASL(t *testing.T) {
	ctx := testContext(t)
	ctr := run(t, ctx, false, sharebroker.WithTLS(), sharebroker.WithSASLUser("alice", "alice-secret"))
	block, _ := pem.Decode(ctr.CACertificate())
	if block == nil {
		t.Fatalf("CA %q is not PEM", ctr.CACertificate())
	}
	if ca, err := x509.ParseCertificate(block.Bytes); err != nil || !ca.IsCA {
		t.Fatalf("CA: %v %+v", err, ca)
	}
	cl := newClient(t, ctx, ctr, kgo.DialTLSConfig(ctr.TLSConfig()),
		kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism()),
		kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("tc-secure"))
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("over tls")}).FirstErr(); err != nil {
		t.Fatalf("produce over SASL_SSL: %v", err)
	}
	// A wrong password is refused.
	bad := newClient(t, ctx, ctr, kgo.DialTLSConfig(ctr.TLSConfig()),
		kgo.SASL(scram.Auth{User: "alice", Pass: "wrong"}.AsSha512Mechanism()))
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := bad.Ping(pingCtx); err == nil {
		t.Fatal("a wrong password was accepted")
	}
}

// Without WithHostNetwork the ports are published (bridge networking):
// here on a network the test makes, since CI's daemon has no default
// bridge. The advertised address is the published one.
func TestRunPublishedPorts(t *testing.T) {
	image(t) // skips before the network is made
	ctx := testContext(t)
	nw, err := network.New(ctx)
	if err != nil {
		t.Skipf("this daemon cannot make a bridge network: %v", err)
	}
	t.Cleanup(func() { nw.Remove(context.Background()) })
	ctr := run(t, ctx, true, network.WithNetwork([]string{"broker"}, nw),
		sharebroker.WithConfig(map[string]string{"num.partitions": "2"}))
	cl := newClient(t, ctx, ctr, kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("tc-bridged"))
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("bridged")}).FirstErr(); err != nil {
		t.Fatalf("produce through a published port: %v", err)
	}
	md, err := kadm.NewClient(cl).Metadata(ctx, "tc-bridged")
	if err != nil {
		t.Fatal(err)
	}
	if got := len(md.Topics["tc-bridged"].Partitions); got != 2 {
		t.Errorf("auto-created topic has %d partitions, want 2 (WithConfig num.partitions)", got)
	}
	inspect, err := ctr.Inspect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if mode := inspect.HostConfig.NetworkMode; mode == "host" {
		t.Fatalf("network mode %q, want the test's bridge network", mode)
	}
}

// WithoutTestAPI: the helpers fail with ErrTestAPIOff and the broker has no
// /v1/test/ routes.
func TestRunWithoutTestAPI(t *testing.T) {
	ctx := testContext(t)
	ctr := run(t, ctx, false, sharebroker.WithoutTestAPI())
	if _, err := ctr.AdvanceClock(ctx, time.Second); !errors.Is(err, sharebroker.ErrTestAPIOff) {
		t.Fatalf("advance: %v, want ErrTestAPIOff", err)
	}
	httpAddr, _ := ctr.HTTPAddress(ctx)
	if code := httpStatus(t, ctx, "http://"+httpAddr+"/v1/test/clock", ctr.HTTPToken()); code != http.StatusNotFound {
		t.Fatalf("/v1/test/clock: %d, want 404", code)
	}
}

func httpStatus(t *testing.T, ctx context.Context, url, token string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

var _ testcontainers.Container = (*sharebroker.Container)(nil)

// Seeded state through the container (docs/seeding.md): a topic and a
// group config from options, another topic from a seed file, all made
// before Run returns. The share group reads records produced before its
// consumer started, because its seeded share.auto.offset.reset is
// earliest; nothing is configured by hand.
func TestRunSeeded(t *testing.T) {
	ctx := testContext(t)
	seed := filepath.Join(t.TempDir(), "seed.json")
	if err := os.WriteFile(seed, []byte(`{"topics": [{"name": "tc-from-file", "partitions": 2, "configs": {"retention.ms": "60000"}}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	const topic, group, n = "tc-seeded", "tc-seeded-workers", 5
	ctr := run(t, ctx, false,
		sharebroker.WithTopic(topic, 3, map[string]string{"cleanup.policy": "delete"}),
		sharebroker.WithGroupConfig(group, map[string]string{"share.auto.offset.reset": "earliest"}),
		sharebroker.WithSeedFile(seed))

	cl := newClient(t, ctx, ctr, kgo.DefaultProduceTopic(topic))
	details, err := kadm.NewClient(cl).ListTopics(ctx, topic, "tc-from-file")
	if err != nil {
		t.Fatal(err)
	}
	if got := len(details[topic].Partitions); got != 3 {
		t.Errorf("%s has %d partitions, want 3", topic, got)
	}
	if got := len(details["tc-from-file"].Partitions); got != 2 {
		t.Errorf("tc-from-file has %d partitions, want 2", got)
	}
	for i := range n {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "v%d", i)}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	consumer := newClient(t, ctx, ctr, kgo.ConsumeTopics(topic), kgo.ShareGroup(group))
	seen := map[string]bool{}
	for len(seen) < n && ctx.Err() == nil {
		for _, r := range consumer.PollFetches(ctx).Records() {
			seen[string(r.Value)] = true
			r.Ack(kgo.AckAccept)
		}
	}
	if len(seen) != n {
		t.Fatalf("share-consumed %d of the %d records produced before the consumer started", len(seen), n)
	}
}
