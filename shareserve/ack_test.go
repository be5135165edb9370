package shareserve

import (
	"errors"
	"testing"

	"github.com/sharebroker/sharebroker/sharepartition"
)

// Each case names the rule of share-groups.md §2.5/§2.6 it checks.
func TestValidateAckBatches(t *testing.T) {
	b := func(first, last int64, types ...sharepartition.AckType) sharepartition.AckBatch {
		return sharepartition.AckBatch{FirstOffset: first, LastOffset: last, Types: types}
	}
	cases := []struct {
		name    string
		version int16
		renew   bool
		batches []sharepartition.AckBatch
		ok      bool
	}{
		{"no batches is success", 1, false, nil, true},
		{"one type for a range", 1, false, []sharepartition.AckBatch{b(0, 9, sharepartition.AckAccept)}, true},
		{"one type per offset", 1, false, []sharepartition.AckBatch{b(0, 2, sharepartition.AckAccept, sharepartition.AckRelease, sharepartition.AckReject)}, true},
		{"gap type", 1, false, []sharepartition.AckBatch{b(0, 0, sharepartition.AckGap)}, true},
		{"inverted batch", 1, false, []sharepartition.AckBatch{b(5, 4, sharepartition.AckAccept)}, false},
		{"overlapping batches", 1, false, []sharepartition.AckBatch{b(0, 5, sharepartition.AckAccept), b(4, 6, sharepartition.AckAccept)}, false},
		{"adjacent batch sharing the last offset is let through", 1, false, []sharepartition.AckBatch{b(0, 5, sharepartition.AckAccept), b(5, 6, sharepartition.AckAccept)}, true},
		{"no types", 1, false, []sharepartition.AckBatch{b(0, 1)}, false},
		{"types neither one nor one per offset", 1, false, []sharepartition.AckBatch{b(0, 3, sharepartition.AckAccept, sharepartition.AckAccept)}, false},
		{"negative type", 2, true, []sharepartition.AckBatch{b(0, 0, -1)}, false},
		{"renew on v1", 1, false, []sharepartition.AckBatch{b(0, 0, sharepartition.AckRenew)}, false},
		{"renew on v1 even with the flag", 1, true, []sharepartition.AckBatch{b(0, 0, sharepartition.AckRenew)}, false},
		{"renew on v2 without IsRenewAck", 2, false, []sharepartition.AckBatch{b(0, 0, sharepartition.AckRenew)}, false},
		{"renew on v2 with IsRenewAck", 2, true, []sharepartition.AckBatch{b(0, 0, sharepartition.AckRenew)}, true},
		{"renew mixed with accept", 2, true, []sharepartition.AckBatch{b(0, 1, sharepartition.AckRenew, sharepartition.AckAccept)}, true},
		{"IsRenewAck without any renew", 2, true, []sharepartition.AckBatch{b(0, 0, sharepartition.AckAccept)}, true},
		{"type 5 on v2", 2, true, []sharepartition.AckBatch{b(0, 0, 5)}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateAckBatches(tc.version, tc.renew, tc.batches)
			if tc.ok && err != nil {
				t.Fatalf("rejected: %v", err)
			}
			if !tc.ok && !errors.Is(err, ErrInvalidRequest) {
				t.Fatalf("got %v, want INVALID_REQUEST", err)
			}
		})
	}
}
