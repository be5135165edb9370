package wire

import (
	"bytes"
	"encoding/hex"
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// randomFetchResponse builds a response with the fields a broker fills, at
// random, with enough record bytes to be spliced.
func randomFetchResponse(rng *rand.Rand, version int16) *kmsg.FetchResponse {
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = version
	resp.ThrottleMillis = rng.Int32()
	resp.ErrorCode = int16(rng.IntN(100))
	resp.SessionID = rng.Int32()
	for range 1 + rng.IntN(3) {
		t := kmsg.NewFetchResponseTopic()
		t.Topic = string(bytes.Repeat([]byte{'a' + byte(rng.IntN(26))}, 1+rng.IntN(200)))
		for i := range t.TopicID {
			t.TopicID[i] = byte(rng.Uint32())
		}
		for range 1 + rng.IntN(4) {
			p := kmsg.NewFetchResponseTopicPartition()
			p.Partition = rng.Int32()
			p.ErrorCode = int16(rng.IntN(100))
			p.HighWatermark, p.LastStableOffset, p.LogStartOffset = rng.Int64(), rng.Int64(), rng.Int64()
			p.PreferredReadReplica = -1
			switch rng.IntN(3) {
			case 0: // nil: no aborted transactions
			case 1:
				p.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
			case 2:
				for range 1 + rng.IntN(3) {
					a := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
					a.ProducerID, a.FirstOffset = rng.Int64(), rng.Int64()
					p.AbortedTransactions = append(p.AbortedTransactions, a)
				}
			}
			switch rng.IntN(4) {
			case 0: // nil records
			case 1:
				p.RecordBatches = []byte{}
			default:
				p.RecordBatches = make([]byte, rng.IntN(64<<10))
				for i := range p.RecordBatches {
					p.RecordBatches[i] = byte(i * 7)
				}
			}
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}

// The spliced encoding must be byte-identical to kmsg's, for every version
// we serve: clients decode it with the same code.
func TestAppendFetchResponseMatchesKmsg(t *testing.T) {
	rng := rand.New(rand.NewPCG(42, 1))
	spliced := 0
	for version := int16(4); version <= (&kmsg.FetchResponse{}).MaxVersion(); version++ {
		for range 50 {
			resp := randomFetchResponse(rng, version)
			want := AppendResponse(nil, 12345, resp)
			var pieces RecordPieces
			if rng.IntN(2) == 0 {
				// The same records, cut into pieces that the encoder
				// must splice back to back.
				records := make([][]*[]byte, len(resp.Topics))
				for i := range resp.Topics {
					for j := range resp.Topics[i].Partitions {
						records[i] = append(records[i], &resp.Topics[i].Partitions[j].RecordBatches)
					}
				}
				pieces = cutRecords(rng, records)
			}
			buf, segs, ok := AppendFetchResponse(nil, nil, 12345, resp, pieces)
			if !ok {
				if len(buf) != 0 || len(segs) != 0 {
					t.Fatalf("v%d: declined but returned %d bytes, %d segments", version, len(buf), len(segs))
				}
				continue
			}
			spliced++
			got := bytes.Join(segs, nil)
			if !bytes.Equal(got, want) {
				t.Fatalf("v%d: spliced encoding differs from kmsg\n got %s\nwant %s", version,
					hex.EncodeToString(got[:min(len(got), 96)]), hex.EncodeToString(want[:min(len(want), 96)]))
			}
		}
	}
	if spliced == 0 {
		t.Fatal("no response was large enough to splice: the test checks nothing")
	}
}

func TestAppendFetchResponseDeclines(t *testing.T) {
	big := make([]byte, minSpliceBytes)
	base := func() *kmsg.FetchResponse {
		resp := kmsg.NewPtrFetchResponse()
		resp.Version = 16
		tp := kmsg.NewFetchResponseTopic()
		p := kmsg.NewFetchResponseTopicPartition()
		p.RecordBatches = big
		tp.Partitions = append(tp.Partitions, p)
		resp.Topics = append(resp.Topics, tp)
		return resp
	}
	if _, _, ok := AppendFetchResponse(nil, nil, 1, base(), nil); !ok {
		t.Fatal("a plain response with enough records was declined")
	}
	cases := map[string]func(*kmsg.FetchResponse){
		"small records":   func(r *kmsg.FetchResponse) { r.Topics[0].Partitions[0].RecordBatches = big[:10] },
		"current leader":  func(r *kmsg.FetchResponse) { r.Topics[0].Partitions[0].CurrentLeader.LeaderID = 1 },
		"diverging epoch": func(r *kmsg.FetchResponse) { r.Topics[0].Partitions[0].DivergingEpoch.Epoch = 3 },
		"snapshot id":     func(r *kmsg.FetchResponse) { r.Topics[0].Partitions[0].SnapshotID.Epoch = 3 },
		"node endpoints":  func(r *kmsg.FetchResponse) { r.Brokers = append(r.Brokers, kmsg.NewFetchResponseBroker()) },
		"unknown tags":    func(r *kmsg.FetchResponse) { r.UnknownTags.Set(9, []byte{1}) },
	}
	for name, mutate := range cases {
		resp := base()
		mutate(resp)
		if _, _, ok := AppendFetchResponse(nil, nil, 1, resp, nil); ok {
			t.Errorf("%s: spliced a response it cannot encode", name)
		}
	}
}

// cutRecords cuts each non-empty record field (records[t][p]) into one to
// four non-empty pieces, sets the field to nil, and returns the pieces as a
// RecordPieces: an encoding from them must equal one from the fields.
func cutRecords(rng *rand.Rand, records [][]*[]byte) RecordPieces {
	cut := make([][][][]byte, len(records))
	for t, fields := range records {
		cut[t] = make([][][]byte, len(fields))
		for p, field := range fields {
			b := *field
			if len(b) == 0 {
				continue
			}
			for len(b) > 0 {
				n := len(b)
				if len(cut[t][p]) < 3 {
					n = 1 + rng.IntN(len(b))
				}
				cut[t][p] = append(cut[t][p], b[:n])
				b = b[n:]
			}
			*field = nil
		}
	}
	return func(t, p int) [][]byte { return cut[t][p] }
}
