package broker_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharebroker/sharebroker/broker"
	"github.com/sharebroker/sharebroker/locktimer"
)

// These tests drive kgo share consumers against the broker on the manual
// clock, one rule of share-groups.md §1.2 each. The consumers fetch only
// inside a poll (ShareMaxRecordsStrict), so a record one consumer holds is
// never fetched behind the test's back. Locks last 15 s; member sessions
// 60 s, so advancing the clock past a lock never fences a member.

const (
	semTopic = "queue"
	semGroup = "workers"
	semLock  = 15 * time.Second
)

type shareEnv struct {
	t     *testing.T
	ctx   context.Context
	clock *locktimer.ManualClock
	addr  string
	admin *kgo.Client
}

func newShareEnv(t *testing.T, groupConfigs ...string) *shareEnv {
	t.Helper()
	clock := locktimer.NewManualClock(time.Unix(1_700_000_000, 0))
	_, addr := startBroker(t, broker.Config{Clock: clock})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	admin, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic(semTopic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(admin.Close)
	e := &shareEnv{t: t, ctx: ctx, clock: clock, addr: addr, admin: admin}
	configs := append([]string{
		"share.auto.offset.reset", "earliest",
		"share.record.lock.duration.ms", "15000",
		"share.session.timeout.ms", "60000",
	}, groupConfigs...)
	for i := 0; i+1 < len(configs); i += 2 {
		setGroupConfig(t, ctx, admin, semGroup, configs[i], configs[i+1])
	}
	return e
}

// produce appends one record per value, in order.
func (e *shareEnv) produce(values ...string) {
	e.t.Helper()
	for _, v := range values {
		if err := e.admin.ProduceSync(e.ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			e.t.Fatalf("produce %s: %v", v, err)
		}
	}
}

// ackLog collects the acknowledgement outcomes a consumer's callback sees.
type ackLog struct {
	mu   sync.Mutex
	errs []error
}

func (l *ackLog) callback(_ *kgo.Client, results kgo.ShareAckResults) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range results {
		l.errs = append(l.errs, r.Err)
	}
}

// take returns the outcomes seen so far and forgets them.
func (l *ackLog) take() []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	errs := l.errs
	l.errs = nil
	return errs
}

func (e *shareEnv) consumer() (*kgo.Client, *ackLog) {
	e.t.Helper()
	acks := &ackLog{}
	cl := newShareConsumer(e.t, e.addr, semTopic, semGroup,
		kgo.ShareMaxRecords(10), kgo.ShareMaxRecordsStrict(), kgo.ShareAckCallback(acks.callback))
	return cl, acks
}

// poll returns the next records cl is handed; it fails the test if none
// come before the test's deadline. A later poll accepts, in kgo, whatever
// this one returned and was not acknowledged, so tests that hold records
// stop polling that consumer.
func (e *shareEnv) poll(cl *kgo.Client) []*kgo.Record {
	e.t.Helper()
	for e.ctx.Err() == nil {
		fs := cl.PollFetches(e.ctx)
		if recs := fs.Records(); len(recs) > 0 {
			return recs
		}
	}
	e.t.Fatal("no records before the deadline")
	return nil
}

func (e *shareEnv) flush(cl *kgo.Client) {
	e.t.Helper()
	if err := cl.FlushAcks(e.ctx); err != nil {
		e.t.Fatalf("flush acks: %v", err)
	}
}

func one(t *testing.T, recs []*kgo.Record, value string, deliveryCount int32) *kgo.Record {
	t.Helper()
	if len(recs) != 1 || string(recs[0].Value) != value || recs[0].DeliveryCount() != deliveryCount {
		var got []string
		for _, r := range recs {
			got = append(got, fmt.Sprintf("%s@%d", r.Value, r.DeliveryCount()))
		}
		t.Fatalf("got %v, want [%s@%d]", got, value, deliveryCount)
	}
	return recs[0]
}

// Row 5: a RELEASE makes the record available again; the other member gets
// it with delivery count 2.
func TestShareReleaseRedeliversToAnotherMember(t *testing.T) {
	e := newShareEnv(t)
	e.produce("r0")
	c1, acks1 := e.consumer()
	c2, _ := e.consumer()
	one(t, e.poll(c1), "r0", 1).Ack(kgo.AckRelease)
	e.flush(c1)
	if errs := acks1.take(); len(errs) != 1 || errs[0] != nil {
		t.Fatalf("release outcome %v", errs)
	}
	one(t, e.poll(c2), "r0", 2)
}

// Row 3: a REJECT archives the record: the next record is delivered, this
// one never again.
func TestShareRejectArchives(t *testing.T) {
	e := newShareEnv(t)
	e.produce("r0")
	c1, _ := e.consumer()
	c2, _ := e.consumer()
	one(t, e.poll(c1), "r0", 1).Ack(kgo.AckReject)
	e.flush(c1)
	e.produce("r1")
	// Acquisition starts at the lowest available offset: had r0 been
	// available again, c2 would get it first.
	one(t, e.poll(c2), "r1", 1)
}

// Row 7: a record never acknowledged is redelivered once its lock expires,
// with its delivery count raised.
func TestShareLockExpiryRedelivers(t *testing.T) {
	e := newShareEnv(t)
	e.produce("r0")
	c1, _ := e.consumer()
	c2, _ := e.consumer()
	one(t, e.poll(c1), "r0", 1) // held, never acknowledged
	e.clock.Advance(semLock)
	one(t, e.poll(c2), "r0", 2)
}

// §1.3: at the delivery count limit a released record is archived.
func TestShareDeliveryLimitArchives(t *testing.T) {
	e := newShareEnv(t, "share.delivery.count.limit", "2")
	e.produce("r0")
	c1, _ := e.consumer()
	one(t, e.poll(c1), "r0", 1).Ack(kgo.AckRelease)
	e.flush(c1)
	one(t, e.poll(c1), "r0", 2).Ack(kgo.AckRelease) // the last attempt ends
	e.flush(c1)
	e.produce("r1")
	one(t, e.poll(c1), "r1", 1)
}

// Row 6 (KIP-1222): a member that renews every 0.4 lock durations keeps its
// record for 1.5 lock durations — the other member is never handed it —
// and then accepts it with delivery count 1.
func TestShareRenewKeepsTheLock(t *testing.T) {
	e := newShareEnv(t)
	e.produce("r0")
	c1, acks1 := e.consumer()
	c2, acks2 := e.consumer()
	r := one(t, e.poll(c1), "r0", 1)
	step := semLock * 4 / 10
	for held := time.Duration(0); held < semLock*3/2; held += step {
		r.Ack(kgo.AckRenew)
		e.flush(c1)
		if errs := acks1.take(); len(errs) != 1 || errs[0] != nil {
			t.Fatalf("renew after %v: outcome %v", held, errs)
		}
		e.clock.Advance(step)
	}
	// r0 is still locked to c1: the other member is handed r1, not r0.
	e.produce("r1")
	one(t, e.poll(c2), "r1", 1).Ack(kgo.AckAccept)
	e.flush(c2)
	if errs := acks2.take(); len(errs) != 1 || errs[0] != nil {
		t.Fatalf("c2 accept outcome %v", errs)
	}
	r.Ack(kgo.AckAccept)
	e.flush(c1)
	if errs := acks1.take(); len(errs) != 1 || errs[0] != nil {
		t.Fatalf("accept after renewals: outcome %v", errs)
	}
}

// §1.2: a late ACCEPT, after the lock expired and another member acquired
// the record, fails with INVALID_RECORD_STATE; the new owner's succeeds.
// Exactly one member's accept of a record ever succeeds.
func TestShareLateAcceptFails(t *testing.T) {
	e := newShareEnv(t)
	e.produce("r0")
	c1, acks1 := e.consumer()
	c2, acks2 := e.consumer()
	late := one(t, e.poll(c1), "r0", 1)
	e.clock.Advance(semLock)
	fresh := one(t, e.poll(c2), "r0", 2)

	late.Ack(kgo.AckAccept)
	e.flush(c1)
	errs := acks1.take()
	if len(errs) != 1 || !errors.Is(errs[0], kerr.InvalidRecordState) {
		t.Fatalf("late accept outcome %v, want INVALID_RECORD_STATE", errs)
	}
	fresh.Ack(kgo.AckAccept)
	e.flush(c2)
	if errs := acks2.take(); len(errs) != 1 || errs[0] != nil {
		t.Fatalf("owner's accept outcome %v", errs)
	}
}

// Row 8: closing a consumer releases what it holds; the attempt counts.
func TestShareCloseReleases(t *testing.T) {
	e := newShareEnv(t)
	e.produce("r0")
	c1, _ := e.consumer()
	c2, _ := e.consumer()
	one(t, e.poll(c1), "r0", 1)
	c1.Close()
	one(t, e.poll(c2), "r0", 2)
}
