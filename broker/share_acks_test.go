package broker

import (
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/sharepartition"
)

// Each case names the rule of share-groups.md §2.5/§2.6 it checks.
func TestValidateAckBatches(t *testing.T) {
	b := func(first, last int64, types ...sharepartition.AckType) wireAckBatch {
		wire := make([]int8, len(types))
		for i, t := range types {
			wire[i] = int8(t)
		}
		return wireAckBatch{first: first, last: last, types: wire}
	}
	cases := []struct {
		name    string
		version int16
		renew   bool
		batches []wireAckBatch
		ok      bool
	}{
		{"no batches is success", 1, false, nil, true},
		{"one type for a range", 1, false, []wireAckBatch{b(0, 9, sharepartition.AckAccept)}, true},
		{"one type per offset", 1, false, []wireAckBatch{b(0, 2, sharepartition.AckAccept, sharepartition.AckRelease, sharepartition.AckReject)}, true},
		{"gap type", 1, false, []wireAckBatch{b(0, 0, sharepartition.AckGap)}, true},
		{"inverted batch", 1, false, []wireAckBatch{b(5, 4, sharepartition.AckAccept)}, false},
		{"overlapping batches", 1, false, []wireAckBatch{b(0, 5, sharepartition.AckAccept), b(4, 6, sharepartition.AckAccept)}, false},
		{"adjacent batch sharing the last offset is let through", 1, false, []wireAckBatch{b(0, 5, sharepartition.AckAccept), b(5, 6, sharepartition.AckAccept)}, true},
		{"no types", 1, false, []wireAckBatch{b(0, 1)}, false},
		{"types neither one nor one per offset", 1, false, []wireAckBatch{b(0, 3, sharepartition.AckAccept, sharepartition.AckAccept)}, false},
		{"negative type", 2, true, []wireAckBatch{b(0, 0, -1)}, false},
		{"renew on v1", 1, false, []wireAckBatch{b(0, 0, sharepartition.AckRenew)}, false},
		{"renew on v1 even with the flag", 1, true, []wireAckBatch{b(0, 0, sharepartition.AckRenew)}, false},
		{"renew on v2 without IsRenewAck", 2, false, []wireAckBatch{b(0, 0, sharepartition.AckRenew)}, false},
		{"renew on v2 with IsRenewAck", 2, true, []wireAckBatch{b(0, 0, sharepartition.AckRenew)}, true},
		{"renew mixed with accept", 2, true, []wireAckBatch{b(0, 1, sharepartition.AckRenew, sharepartition.AckAccept)}, true},
		{"IsRenewAck without any renew", 2, true, []wireAckBatch{b(0, 0, sharepartition.AckAccept)}, true},
		{"type 5 on v2", 2, true, []wireAckBatch{b(0, 0, 5)}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := validateAckBatches(tc.version, tc.renew, tc.batches)
			if tc.ok && err != nil {
				t.Fatalf("rejected: %v", err)
			}
			if !tc.ok && !errors.Is(err, errInvalidRequest) {
				t.Fatalf("got %v, want INVALID_REQUEST", err)
			}
		})
	}
}

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
