package wire

import (
	"bytes"
	"encoding/hex"
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func randomShareFetchResponse(rng *rand.Rand, version int16) *kmsg.ShareFetchResponse {
	str := func() *string {
		if rng.IntN(3) == 0 {
			return nil
		}
		s := string(bytes.Repeat([]byte{'e'}, rng.IntN(40)))
		return &s
	}
	resp := kmsg.NewPtrShareFetchResponse()
	resp.Version = version
	resp.ThrottleMillis, resp.ErrorCode, resp.ErrorMessage = rng.Int32(), int16(rng.IntN(130)), str()
	resp.AcquisitionLockTimeoutMillis = rng.Int32()
	for range 1 + rng.IntN(3) {
		t := kmsg.NewShareFetchResponseTopic()
		for i := range t.TopicID {
			t.TopicID[i] = byte(rng.Uint32())
		}
		for range 1 + rng.IntN(4) {
			p := kmsg.NewShareFetchResponseTopicPartition()
			p.Partition, p.ErrorCode, p.ErrorMessage = rng.Int32(), int16(rng.IntN(130)), str()
			p.AcknowledgeErrorCode, p.AcknowledgeErrorMessage = int16(rng.IntN(130)), str()
			p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = rng.Int32(), rng.Int32()
			switch rng.IntN(4) {
			case 0:
			case 1:
				p.Records = []byte{}
			default:
				p.Records = make([]byte, rng.IntN(64<<10))
				for i := range p.Records {
					p.Records[i] = byte(i * 13)
				}
			}
			for range rng.IntN(3) {
				a := kmsg.NewShareFetchResponseTopicPartitionAcquiredRecord()
				a.FirstOffset, a.LastOffset, a.DeliveryCount = rng.Int64(), rng.Int64(), int16(rng.IntN(10))
				p.AcquiredRecords = append(p.AcquiredRecords, a)
			}
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	for range rng.IntN(2) {
		n := kmsg.NewShareFetchResponseNodeEndpoint()
		n.NodeID, n.Host, n.Port, n.Rack = rng.Int32(), "localhost", rng.Int32(), str()
		resp.NodeEndpoints = append(resp.NodeEndpoints, n)
	}
	return resp
}

// Byte-identical to kmsg's encoding for every version served.
func TestAppendShareFetchResponseMatchesKmsg(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 78))
	spliced := 0
	for version := int16(1); version <= (&kmsg.ShareFetchResponse{}).MaxVersion(); version++ {
		for range 100 {
			resp := randomShareFetchResponse(rng, version)
			want := AppendResponse(nil, 4242, resp)
			var pieces RecordPieces
			if rng.IntN(2) == 0 {
				records := make([][]*[]byte, len(resp.Topics))
				for i := range resp.Topics {
					for j := range resp.Topics[i].Partitions {
						records[i] = append(records[i], &resp.Topics[i].Partitions[j].Records)
					}
				}
				pieces = cutRecords(rng, records)
			}
			buf, segs, ok := AppendShareFetchResponse(nil, nil, 4242, resp, pieces)
			if !ok {
				if len(buf) != 0 || len(segs) != 0 {
					t.Fatalf("v%d: declined but returned %d bytes, %d segments", version, len(buf), len(segs))
				}
				continue
			}
			spliced++
			if got := bytes.Join(segs, nil); !bytes.Equal(got, want) {
				t.Fatalf("v%d: spliced encoding differs from kmsg\n got %s\nwant %s", version,
					hex.EncodeToString(got[:min(len(got), 128)]), hex.EncodeToString(want[:min(len(want), 128)]))
			}
		}
	}
	if spliced == 0 {
		t.Fatal("no response was large enough to splice: the test checks nothing")
	}
	resp := randomShareFetchResponse(rng, 2)
	resp.UnknownTags.Set(3, []byte{1})
	if _, _, ok := AppendShareFetchResponse(nil, nil, 1, resp, nil); ok {
		t.Fatal("spliced a response with unknown tags")
	}
}
