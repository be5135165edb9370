package broker

import (
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/sharepartition"
)

func TestValidateShareMemberID(t *testing.T) {
	s := func(v string) *string { return &v }
	for name, tc := range map[string]struct {
		id *string
		ok bool
	}{
		"null":      {nil, false},
		"empty":     {s(""), false},
		"uuid":      {s("0f8fad5b-d9cb-469f-a165-70867728950e"), true},
		"37 chars":  {s(strings.Repeat("x", 37)), false},
		"short ids": {s("m1"), true},
		// Kafka counts Java chars (UTF-16 units), not bytes: 36 × "é" is
		// 72 bytes and still a valid member ID, as in ShareGroupHeartbeat.
		"36 two-byte runes": {s(strings.Repeat("\u00e9", 36)), true},
		"37 two-byte runes": {s(strings.Repeat("\u00e9", 37)), false},
		"18 astral runes":   {s(strings.Repeat("\U0001F600", 18)), true},
		"19 astral runes":   {s(strings.Repeat("\U0001F600", 19)), false},
	} {
		if err := validateShareMemberID(tc.id); (err == nil) != tc.ok {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestValidateRenewFetch(t *testing.T) {
	req := kmsg.NewPtrShareFetchRequest()
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.MaxRecords = 500, 1, 1<<20, 500
	if err := validateRenewFetch(req); err != nil {
		t.Fatalf("a normal fetch was checked as a renew fetch: %v", err)
	}
	req.IsRenewAck = true
	if err := validateRenewFetch(req); !errors.Is(err, errInvalidRequest) {
		t.Fatalf("renew fetch with limits: %v", err)
	}
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.MaxRecords = 0, 0, 0, 0
	req.BatchSize, req.ShareAcquireMode = 500, 1 // not checked, as in Kafka
	if err := validateRenewFetch(req); err != nil {
		t.Fatalf("renew fetch with zero limits: %v", err)
	}
}

// TestShareAckBatchesAllocations pins share-ack-batches-allocations: a
// partition's acknowledgement batches convert with two allocations however
// many there are, each batch keeps its own types (an append to one does
// not reach the next), and the conversion is unchanged.
func TestShareAckBatchesAllocations(t *testing.T) {
	var in []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch
	var inAck []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch
	for i := range int64(11) {
		types := []int8{1}
		if i%3 == 2 {
			types = []int8{1, 2, 3, 0}
		}
		b := kmsg.NewShareFetchRequestTopicPartitionAcknowledgementBatch()
		b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = i*10, i*10+int64(len(types))-1, types
		if len(types) == 1 {
			b.LastOffset = i*10 + 5
		}
		in = append(in, b)
		a := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
		a.FirstOffset, a.LastOffset, a.AcknowledgeTypes = b.FirstOffset, b.LastOffset, b.AcknowledgeTypes
		inAck = append(inAck, a)
	}
	for name, conv := range map[string]func() []sharepartition.AckBatch{
		"ShareFetch":       func() []sharepartition.AckBatch { return fetchAckBatches(in) },
		"ShareAcknowledge": func() []sharepartition.AckBatch { return ackRequestAckBatches(inAck) },
	} {
		t.Run(name, func(t *testing.T) {
			out := conv()
			if len(out) != len(in) {
				t.Fatalf("%d batches, want %d", len(out), len(in))
			}
			for i, b := range out {
				if b.FirstOffset != in[i].FirstOffset || b.LastOffset != in[i].LastOffset || len(b.Types) != len(in[i].AcknowledgeTypes) || cap(b.Types) != len(b.Types) {
					t.Fatalf("batch %d: %+v (cap %d) from %+v", i, b, cap(b.Types), in[i])
				}
				for j, ty := range b.Types {
					if int8(ty) != in[i].AcknowledgeTypes[j] {
						t.Fatalf("batch %d type %d: %d, want %d", i, j, ty, in[i].AcknowledgeTypes[j])
					}
				}
			}
			if n := testing.AllocsPerRun(100, func() { conv() }); n > 2 {
				t.Errorf("%v allocations for %d batches, want at most 2", n, len(in))
			}
		})
	}
	if out := fetchAckBatches(nil); len(out) != 0 {
		t.Errorf("no batches: %+v", out)
	}
}
