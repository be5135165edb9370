package broker_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/broker"
	"github.com/sharebroker/sharebroker/locktimer"
)

// These tests drive kgo share consumers against the broker on the manual
// clock, one rule of share-groups.md §1.2 each. Locks last 15 s; member
// sessions 60 s, so advancing the clock past a lock never fences a member.
//
// kgo may send one more ShareFetch after a poll returns, and sends its
// acknowledgements on that same connection, one request at a time. Two
// consequences shape the tests:
//   - no two members ever compete for a record that becomes free: each test
//     has one kgo consumer, plus, where a second member is needed, a member
//     driven by raw requests (rawShare), which fetches only when told to;
//   - while a kgo call blocks, the manual clock follows real time in 1 ms
//     steps (during), so a fetch kgo left waiting ends after its MaxWait
//     as it would against a real broker, instead of holding up the
//     acknowledgements queued behind it. The drift is milliseconds against
//     15 s locks; the tests of exact lock boundaries use raw requests only.

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
	// No idle sweep (connections-max-idle): tests here count the clock's
	// timers, and the share ones run past ten idle minutes.
	_, addr := startBroker(t, broker.Config{Clock: clock, Props: map[string]string{"connections.max.idle.ms": "-1"}})
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
	var recs []*kgo.Record
	e.during(func() {
		for e.ctx.Err() == nil && len(recs) == 0 {
			recs = cl.PollFetches(e.ctx).Records()
		}
	})
	if len(recs) == 0 {
		e.t.Fatal("no records before the deadline")
	}
	return recs
}

func (e *shareEnv) flush(cl *kgo.Client) {
	e.t.Helper()
	var err error
	e.during(func() { err = cl.FlushAcks(e.ctx) })
	if err != nil {
		e.t.Fatalf("flush acks: %v", err)
	}
}

// during runs f while the manual clock follows real time, 1 ms per real
// millisecond (see the file comment). Without a manual clock it just runs f.
func (e *shareEnv) during(f func()) {
	if e.clock == nil { // real time passes by itself
		f()
		return
	}
	done := make(chan struct{})
	pumped := make(chan struct{})
	go func() {
		defer close(pumped)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				e.clock.Advance(time.Millisecond)
			}
		}
	}()
	f()
	close(done)
	<-pumped
}

// raw returns a member of the group driven by raw requests, which fetches
// only when the test says so.
func (e *shareEnv) raw() *rawShare {
	e.t.Helper()
	md := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(semTopic)
	md.Topics = append(md.Topics, mt)
	resp, err := md.RequestWith(e.ctx, e.admin)
	if err != nil || len(resp.Topics) != 1 {
		e.t.Fatalf("metadata: %v", err)
	}
	return &rawShare{t: e.t, c: dialRaw(e.t, e.addr), group: semGroup, topicID: resp.Topics[0].TopicID}
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

// Row 5: a RELEASE makes the record available again, with its delivery
// count kept: the same consumer gets it back at delivery count 2.
func TestShareReleaseRedelivers(t *testing.T) {
	e := newShareEnv(t)
	e.produce("r0")
	c1, acks1 := e.consumer()
	one(t, e.poll(c1), "r0", 1).Ack(kgo.AckRelease)
	e.flush(c1)
	if errs := acks1.take(); len(errs) != 1 || errs[0] != nil {
		t.Fatalf("release outcome %v", errs)
	}
	one(t, e.poll(c1), "r0", 2)
}

// Row 5: a record another member released is handed to this one, with
// delivery count 2.
func TestShareReleasedRecordGoesToAnotherMember(t *testing.T) {
	e := newShareEnv(t)
	e.produce("r0")
	m1 := e.raw()
	if p := partitionOf(t, m1.fetch(2, "holder", 0, nil, nil)); len(p.AcquiredRecords) != 1 {
		t.Fatalf("holder acquired %+v", p.AcquiredRecords)
	}
	wantCode(t, "holder's release", m1.ack(2, "holder", 1, false, []ackSpec{{0, 0, []int8{2}}}).Topics[0].Partitions[0].ErrorCode, nil)
	c2, _ := e.consumer()
	one(t, e.poll(c2), "r0", 2)
}

// Row 3: a REJECT archives the record: the next record is delivered, this
// one never again.
func TestShareRejectArchives(t *testing.T) {
	e := newShareEnv(t)
	e.produce("r0")
	c1, _ := e.consumer()
	one(t, e.poll(c1), "r0", 1).Ack(kgo.AckReject)
	e.flush(c1)
	e.produce("r1")
	// Acquisition starts at the lowest available offset: had r0 been
	// available again, it would come first.
	one(t, e.poll(c1), "r1", 1)
}

// Row 7: a record never acknowledged is redelivered once its lock expires,
// with its delivery count raised.
func TestShareLockExpiryRedelivers(t *testing.T) {
	e := newShareEnv(t)
	e.produce("r0")
	m1 := e.raw()
	if p := partitionOf(t, m1.fetch(2, "holder", 0, nil, nil)); len(p.AcquiredRecords) != 1 {
		t.Fatalf("holder acquired %+v", p.AcquiredRecords)
	}
	e.clock.Advance(semLock) // never acknowledged
	c2, _ := e.consumer()
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
// record for 1.5 lock durations — another member is never handed it — and
// then accepts it with delivery count 1.
func TestShareRenewKeepsTheLock(t *testing.T) {
	e := newShareEnv(t)
	e.produce("r0")
	c1, acks1 := e.consumer()
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
	// Another member finds nothing to acquire: r0 is still locked to c1.
	if p := partitionOf(t, e.raw().fetch(2, "other", 0, nil, nil)); len(p.AcquiredRecords) != 0 {
		t.Fatalf("another member acquired %+v while c1 renewed", p.AcquiredRecords)
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
	m1 := e.raw()
	if p := partitionOf(t, m1.fetch(2, "late", 0, nil, nil)); len(p.AcquiredRecords) != 1 {
		t.Fatalf("first member acquired %+v", p.AcquiredRecords)
	}
	e.clock.Advance(semLock)
	c2, acks2 := e.consumer()
	fresh := one(t, e.poll(c2), "r0", 2)

	late := m1.ack(2, "late", 1, false, []ackSpec{{0, 0, []int8{1}}})
	wantCode(t, "late accept", late.Topics[0].Partitions[0].ErrorCode, kerr.InvalidRecordState)
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
	one(t, e.poll(c1), "r0", 1)
	e.during(c1.Close)
	// The other member waits for the release if it has not happened yet:
	// releases wake waiting fetches.
	p := partitionOf(t, e.raw().fetch(2, "other", 0, nil, func(r *kmsg.ShareFetchRequest) { r.MaxWaitMillis = 10_000 }))
	if len(p.AcquiredRecords) != 1 || p.AcquiredRecords[0].DeliveryCount != 2 {
		t.Fatalf("after close, another member acquired %+v, want r0 at delivery count 2", p.AcquiredRecords)
	}
}
