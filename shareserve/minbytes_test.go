package shareserve

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// share-fetch-min-bytes: records are there, but fewer bytes of log than
// MinBytes, so the request acquires nothing and waits; at MaxWait on the
// broker clock it acquires what there is, and counts as expired. Kafka:
// DelayedShareFetchTest.testTryCompleteWhenMinBytesNotSatisfiedOnFirstFetch.
func TestServeFetchMinBytesWaitsForTheDeadline(t *testing.T) {
	f, _ := newServeFixture(t, 1, 10)
	f.produce(t, 0, 2)
	var parked atomic.Int64
	req := f.fetchReq("m1", 0, 1)
	req.MinBytes, req.MaxWait, req.Parked = 1<<20, time.Minute, &parked
	done := make(chan FetchResult)
	go func() { done <- f.s.Fetch(context.Background(), req) }()
	waitParked(t, &parked) // parked with two records acquirable
	if s := f.s.Get("g", f.topic, f.topic.Partition(0)).Share.Snapshot(); s.InFlight != 0 {
		t.Fatalf("%d records in flight while MinBytes is unmet, want none acquired", s.InFlight)
	}
	f.clock.Advance(req.MaxWait)
	res := <-done
	if got := ranges(answerOf(res, f.tp(0))); len(got) != 1 || got[0] != [3]int64{0, 1, 1} {
		t.Errorf("at the deadline acquired %v, want 0-1", got)
	}
	if !res.Expired {
		t.Error("the deadline ended the wait, but the request is not counted as expired")
	}
}

// share-fetch-min-bytes: appends that bring the log bytes up to MinBytes
// end the wait before the deadline, and everything there is acquired.
func TestServeFetchMinBytesMetByAppends(t *testing.T) {
	f, _ := newServeFixture(t, 1, 10)
	f.produce(t, 0, 1)
	one := f.topic.Partition(0).Bytes()
	var parked atomic.Int64
	req := f.fetchReq("m1", 0, 1)
	req.MinBytes, req.MaxWait, req.Parked = int32(3*one), time.Minute, &parked
	done := make(chan FetchResult)
	go func() { done <- f.s.Fetch(context.Background(), req) }()
	waitParked(t, &parked)
	f.produce(t, 0, 1)
	f.produce(t, 0, 1) // three batches of one record: MinBytes met
	res := <-done
	if got := ranges(answerOf(res, f.tp(0))); len(got) == 0 || got[0][0] != 0 || got[len(got)-1][1] != 2 {
		t.Errorf("acquired %v, want offsets 0-2", got)
	}
	if res.Expired {
		t.Error("the appends met MinBytes, yet the request counts as expired")
	}
}

// share-fetch-min-bytes: MinBytes of 1 (what clients send by default) is
// met by any record: the fetch answers at once, as before.
func TestServeFetchMinBytesOneAnswersAtOnce(t *testing.T) {
	f, _ := newServeFixture(t, 1, 10)
	f.produce(t, 0, 2)
	req := f.fetchReq("m1", 0, 1)
	req.MinBytes, req.MaxWait = 1, time.Minute
	res := f.s.Fetch(context.Background(), req)
	if got := ranges(answerOf(res, f.tp(0))); len(got) != 1 || res.Expired {
		t.Errorf("acquired %v, expired %v; want 0-1 at once", got, res.Expired)
	}
}
