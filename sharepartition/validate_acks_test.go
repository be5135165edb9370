package sharepartition

import (
	"errors"
	"testing"
)

// Each case names the rule of share-groups.md §2.5/§2.6 it checks.
func TestValidateAcks(t *testing.T) {
	b := func(first, last int64, types ...AckType) AckBatch {
		return AckBatch{FirstOffset: first, LastOffset: last, Types: types}
	}
	cases := []struct {
		name    string
		version int16
		renew   bool
		batches []AckBatch
		ok      bool
	}{
		{"no batches is success", 1, false, nil, true},
		{"one type for a range", 1, false, []AckBatch{b(0, 9, AckAccept)}, true},
		{"one type per offset", 1, false, []AckBatch{b(0, 2, AckAccept, AckRelease, AckReject)}, true},
		{"gap type", 1, false, []AckBatch{b(0, 0, AckGap)}, true},
		{"inverted batch", 1, false, []AckBatch{b(5, 4, AckAccept)}, false},
		{"overlapping batches", 1, false, []AckBatch{b(0, 5, AckAccept), b(4, 6, AckAccept)}, false},
		{"adjacent batch sharing the last offset is let through", 1, false, []AckBatch{b(0, 5, AckAccept), b(5, 6, AckAccept)}, true},
		{"no types", 1, false, []AckBatch{b(0, 1)}, false},
		{"types neither one nor one per offset", 1, false, []AckBatch{b(0, 3, AckAccept, AckAccept)}, false},
		{"negative type", 2, true, []AckBatch{b(0, 0, -1)}, false},
		{"renew on v1", 1, false, []AckBatch{b(0, 0, AckRenew)}, false},
		{"renew on v1 even with the flag", 1, true, []AckBatch{b(0, 0, AckRenew)}, false},
		{"renew on v2 without IsRenewAck", 2, false, []AckBatch{b(0, 0, AckRenew)}, false},
		{"renew on v2 with IsRenewAck", 2, true, []AckBatch{b(0, 0, AckRenew)}, true},
		{"renew mixed with accept", 2, true, []AckBatch{b(0, 1, AckRenew, AckAccept)}, true},
		{"IsRenewAck without any renew", 2, true, []AckBatch{b(0, 0, AckAccept)}, true},
		{"type 5 on v2", 2, true, []AckBatch{b(0, 0, 5)}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateAcks(tc.version, tc.renew, tc.batches)
			if tc.ok && err != nil {
				t.Fatalf("rejected: %v", err)
			}
			if !tc.ok && !errors.Is(err, ErrAckBatches) {
				t.Fatalf("got %v, want INVALID_REQUEST", err)
			}
		})
	}
}
