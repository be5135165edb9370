package broker_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharebroker/sharebroker/broker"
	"github.com/sharebroker/sharebroker/internal/testadmin"
)

// setGroupConfig sets one GROUP config, e.g. share.auto.offset.reset.
var setGroupConfig = testadmin.SetGroupConfig

// produceValues produces records "v<from>" … "v<from+n-1>" to topic and
// waits for them.
func produceValues(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, from, n int) {
	t.Helper()
	var wg sync.WaitGroup
	for i := from; i < from+n; i++ {
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "v%d", i)}, func(_ *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	wg.Wait()
}

func newShareConsumer(t *testing.T, addr, topic, groupID string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.ConsumeTopics(topic),
		kgo.ShareGroup(groupID),
		kgo.FetchMaxWait(200 * time.Millisecond),
	}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// Two members of one share group get disjoint records and, together, all
// of them (KIP-932: the partitions are shared, the records are not).
func TestShareConsumersGetDisjointRecords(t *testing.T) {
	_, addr := startBroker(t, broker.Config{Props: map[string]string{"num.partitions": "2"}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Round-robin partitioning puts half the records in each partition;
	// the assignor gives each member one partition.
	admin, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation(),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	const topic, groupID, n = "work", "workers", 2000
	setGroupConfig(t, ctx, admin, groupID, "share.auto.offset.reset", "earliest")
	// The topic exists before the members join, so both are assigned it.
	produceValues(t, ctx, admin, topic, 0, 1)

	// Each fetch takes at most 50 records (KIP-1206 record-limit mode), so
	// both members have to share the work.
	consumers := []*kgo.Client{
		newShareConsumer(t, addr, topic, groupID, kgo.ShareMaxRecords(50), kgo.ShareMaxRecordsStrict()),
		newShareConsumer(t, addr, topic, groupID, kgo.ShareMaxRecords(50), kgo.ShareMaxRecordsStrict()),
	}
	var mu sync.Mutex
	seenBy := make(map[string]int) // value -> consumer index
	dups := 0
	for i, cl := range consumers {
		// The first poll joins the group; it may already bring v0.
		cl.PollFetches(pollOnce(ctx)).EachRecord(func(r *kgo.Record) {
			seenBy[string(r.Value)] = i
			r.Ack(kgo.AckAccept)
		})
	}
	waitForMembers(t, ctx, admin, groupID, 2)
	produceValues(t, ctx, admin, topic, 1, n-1)

	var wg sync.WaitGroup
	for i, cl := range consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				fs := cl.PollFetches(ctx)
				mu.Lock()
				fs.EachRecord(func(r *kgo.Record) {
					if _, ok := seenBy[string(r.Value)]; ok {
						dups++
					}
					seenBy[string(r.Value)] = i
					r.Ack(kgo.AckAccept)
				})
				done := len(seenBy) >= n
				mu.Unlock()
				if err := cl.FlushAcks(ctx); err != nil && ctx.Err() == nil {
					t.Errorf("flush acks: %v", err)
				}
				if done {
					cancel()
				}
			}
		}()
	}
	wg.Wait()
	if len(seenBy) != n {
		var missing []string
		for i := range n {
			if _, ok := seenBy[fmt.Sprintf("v%d", i)]; !ok {
				missing = append(missing, fmt.Sprintf("v%d", i))
			}
		}
		t.Fatalf("saw %d distinct records of %d; missing %v", len(seenBy), n, missing)
	}
	if dups != 0 {
		t.Fatalf("%d records delivered twice although every one was accepted", dups)
	}
	per := [2]int{}
	for _, i := range seenBy {
		per[i]++
	}
	if per[0] == 0 || per[1] == 0 {
		t.Fatalf("one member did all the work: %v", per)
	}
	t.Logf("consumer 0 got %d records, consumer 1 got %d", per[0], per[1])
}

// pollOnce returns a context that ends a poll quickly: enough to join.
func pollOnce(ctx context.Context) context.Context {
	c, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	_ = cancel // ends by its own timeout
	return c
}

// waitForMembers waits, bounded by ctx, until groupID has n members that
// each hold an assignment.
func waitForMembers(t *testing.T, ctx context.Context, cl *kgo.Client, groupID string, n int) {
	t.Helper()
	for ctx.Err() == nil {
		d := describeShareGroup(t, ctx, cl, groupID)
		assigned := 0
		for _, m := range d.Members {
			if len(m.Assignment.TopicPartitions) > 0 {
				assigned++
			}
		}
		if assigned == n {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond): // polling a condition, bounded by ctx
		}
	}
	t.Fatalf("group %s never had %d assigned members", groupID, n)
}
