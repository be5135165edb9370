package broker_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/broker"
	"github.com/sharebroker/sharebroker/internal/batchtest"
	"github.com/sharebroker/sharebroker/locktimer"
)

// TestTxnMarkerLastRaw: marker-last. A transactional Produce is held
// after the coordinator accepted its batch and before the append, while a
// second connection ends the transaction (or the broker does: fencing,
// timeout). The held batch must then be refused and kept out of the log,
// so the marker stays the last batch of its transaction: no transaction
// is left open behind it, the read_committed LSO reaches the high
// watermark, and an abort lists exactly the batches before the marker.
// Without an end in the window, the held batch is stored before the
// marker.
func TestTxnMarkerLastRaw(t *testing.T) {
	const (
		id      = "ml"
		topic   = "mlout"
		timeout = 15_000 // ms; the clean-up runs every 10 s
	)
	type ender func(t *testing.T, admin *rawConn, clock *locktimer.ManualClock, pid int64, epoch int16)
	endTxn := func(commit bool) ender {
		return func(t *testing.T, admin *rawConn, _ *locktimer.ManualClock, pid int64, epoch int16) {
			code(t, "end", admin.endTxn(id, pid, epoch, commit), nil)
		}
	}
	cases := []struct {
		name string
		// early is how many records the transaction stored in the
		// partition before the held batch.
		early int
		// end ends the transaction while the batch is held; nil leaves
		// it open, and the test commits after the batch's answer.
		end ender
		// want is the held batch's answer; commit says which marker
		// the partition ends with.
		want   *kerr.Error
		commit bool
	}{
		{name: "no end in the window", early: 2, want: nil, commit: true},
		{name: "EndTxn commit", early: 2, end: endTxn(true), want: kerr.InvalidTxnState, commit: true},
		{name: "EndTxn abort", early: 2, end: endTxn(false), want: kerr.InvalidTxnState},
		{name: "EndTxn abort before any batch", early: 0, end: endTxn(false), want: kerr.InvalidTxnState},
		{
			// The stale check must not let the batch into the next
			// transaction, which added the same partition.
			name: "EndTxn abort then a new transaction", early: 2, want: kerr.InvalidTxnState,
			end: func(t *testing.T, admin *rawConn, _ *locktimer.ManualClock, pid int64, epoch int16) {
				code(t, "end", admin.endTxn(id, pid, epoch, false), nil)
				code(t, "add again", admin.addPartition(id, pid, epoch, topic, 0), nil)
			},
		},
		{
			name: "fenced by InitProducerId", early: 2, want: kerr.InvalidProducerEpoch,
			end: func(t *testing.T, admin *rawConn, _ *locktimer.ManualClock, _ int64, _ int16) {
				_, _, ec := admin.initTxn(id, timeout)
				code(t, "fencing init", ec, nil)
			},
		},
		{
			name: "transaction timeout", early: 2, want: kerr.InvalidProducerEpoch,
			end: func(t *testing.T, _ *rawConn, clock *locktimer.ManualClock, _ int64, _ int16) {
				clock.Advance(10 * time.Second) // 10 s open: not yet timed out
				clock.Advance(10 * time.Second) // 20 s open: aborted
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clock := locktimer.NewManualClock(time.UnixMilli(1_700_000_000_000))
			b, addr := startBroker(t, broker.Config{Clock: clock})

			// The hook holds the first Produce sent after armed is set.
			var armed atomic.Bool
			held, release := make(chan struct{}), make(chan struct{})
			var releaseOnce sync.Once
			letGo := func() { releaseOnce.Do(func() { close(release) }) }
			t.Cleanup(letGo) // before the broker closes, should the test stop early
			broker.SetTxnProduceHook(b, func() {
				if armed.CompareAndSwap(true, false) {
					close(held)
					<-release
				}
			})

			c, admin := dialRaw(t, addr), dialRaw(t, addr)
			c.createTopics(topic)
			pid, epoch, ec := c.initTxn(id, timeout)
			code(t, "init", ec, nil)
			code(t, "add", c.addPartition(id, pid, epoch, topic, 0), nil)
			if tc.early > 0 {
				code(t, "early produce", c.produce(topic, 0, batchtest.Transactional(pid, epoch, 0, tc.early).Build()).ErrorCode, nil)
			}

			armed.Store(true)
			req := produceReq(topic, 0, -1, batchtest.Transactional(pid, epoch, int32(tc.early), 1).Build())
			corr := c.send(req)
			select {
			case <-held:
			case <-time.After(ioTimeout):
				t.Fatal("the produce never reached the hook")
			}
			if tc.end != nil {
				tc.end(t, admin, clock, pid, epoch)
			}
			letGo()
			sp := c.recv(req, corr, ioTimeout).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
			if got := kerr.ErrorForCode(sp.ErrorCode); got != tc.want && (tc.want != nil || got != nil) {
				// Go on: the log below shows what the answer let through.
				t.Errorf("held produce: error %v at offset %d, want %v", got, sp.BaseOffset, tc.want)
			}
			if tc.end == nil {
				if sp.BaseOffset != int64(tc.early) {
					t.Fatalf("held produce stored at %d, want %d", sp.BaseOffset, tc.early)
				}
				code(t, "end", admin.endTxn(id, pid, epoch, true), nil)
			}

			stored := tc.early // data records in the log
			if tc.want == nil {
				stored++
			}

			// read_committed: nothing left open, and an abort names the
			// transaction's first batch.
			p := c.request(withIsolation(fetchReq(topic, 0, 0), 1)).(*kmsg.FetchResponse).Topics[0].Partitions[0]
			code(t, "read_committed fetch", p.ErrorCode, nil)
			if p.HighWatermark != int64(stored)+1 || p.LastStableOffset != p.HighWatermark {
				t.Errorf("read_committed: HW %d LSO %d, want both %d", p.HighWatermark, p.LastStableOffset, stored+1)
			}
			wantAborted := !tc.commit && tc.early > 0
			switch {
			case wantAborted && (len(p.AbortedTransactions) != 1 || p.AbortedTransactions[0].ProducerID != pid || p.AbortedTransactions[0].FirstOffset != 0):
				t.Errorf("aborted transactions %+v, want producer %d from offset 0", p.AbortedTransactions, pid)
			case !wantAborted && len(p.AbortedTransactions) != 0:
				t.Errorf("aborted transactions %+v, want none", p.AbortedTransactions)
			}

			// The log: the early batch, the held one if it was accepted,
			// and the marker last.
			markerAt := int64(stored)
			var want []int64 // first offsets of the data batches
			if tc.early > 0 {
				want = append(want, 0)
			}
			if tc.want == nil {
				want = append(want, int64(tc.early))
			}
			batches := c.fetchAll(topic, 0)
			if len(batches) != len(want)+1 {
				t.Fatalf("log has %d batches %s, want %d data batches then the marker", len(batches), describeBatches(batches), len(want))
			}
			for i, first := range want {
				if rb := batches[i]; rb.FirstOffset != first || rb.Attributes&0x20 != 0 {
					t.Fatalf("batch %d: %s, want data at %d", i, describeBatches(batches), first)
				}
			}
			marker := batches[len(batches)-1]
			if marker.FirstOffset != markerAt || marker.Attributes&0x20 == 0 || marker.ProducerID != pid {
				t.Fatalf("last batch %s, want producer %d's marker at %d", describeBatches(batches), pid, markerAt)
			}
			if got := markerType(t, marker); got != tc.commit {
				t.Fatalf("marker commit=%v, want %v", got, tc.commit)
			}

		})
	}
}

// markerType reads a control batch's record key: true for COMMIT.
func markerType(t *testing.T, rb kmsg.RecordBatch) bool {
	t.Helper()
	var r kmsg.Record
	if err := r.ReadFrom(rb.Records); err != nil || rb.NumRecords != 1 || len(r.Key) != 4 {
		t.Fatalf("marker batch: %d records, key %x, err %v", rb.NumRecords, r.Key, err)
	}
	return r.Key[3] == 1
}

func describeBatches(batches []kmsg.RecordBatch) string {
	s := "["
	for i, rb := range batches {
		if i > 0 {
			s += " "
		}
		kind := "data"
		if rb.Attributes&0x20 != 0 {
			kind = "marker"
		}
		s += fmt.Sprintf("%s@%d", kind, rb.FirstOffset)
	}
	return s + "]"
}
