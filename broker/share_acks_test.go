package broker

import (
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Each case names the rule of share-groups.md §2.5/§2.6 it checks.
func TestValidateAckBatches(t *testing.T) {
	b := func(first, last int64, types ...int8) wireAckBatch {
		return wireAckBatch{first: first, last: last, types: types}
	}
	cases := []struct {
		name    string
		version int16
		renew   bool
		batches []wireAckBatch
		ok      bool
	}{
		{"no batches is success", 1, false, nil, true},
		{"one type for a range", 1, false, []wireAckBatch{b(0, 9, ackAccept)}, true},
		{"one type per offset", 1, false, []wireAckBatch{b(0, 2, ackAccept, ackRelease, ackReject)}, true},
		{"gap type", 1, false, []wireAckBatch{b(0, 0, ackGap)}, true},
		{"inverted batch", 1, false, []wireAckBatch{b(5, 4, ackAccept)}, false},
		{"overlapping batches", 1, false, []wireAckBatch{b(0, 5, ackAccept), b(4, 6, ackAccept)}, false},
		{"adjacent batch sharing the last offset is let through", 1, false, []wireAckBatch{b(0, 5, ackAccept), b(5, 6, ackAccept)}, true},
		{"no types", 1, false, []wireAckBatch{b(0, 1)}, false},
		{"types neither one nor one per offset", 1, false, []wireAckBatch{b(0, 3, ackAccept, ackAccept)}, false},
		{"negative type", 2, true, []wireAckBatch{b(0, 0, -1)}, false},
		{"renew on v1", 1, false, []wireAckBatch{b(0, 0, ackRenew)}, false},
		{"renew on v1 even with the flag", 1, true, []wireAckBatch{b(0, 0, ackRenew)}, false},
		{"renew on v2 without IsRenewAck", 2, false, []wireAckBatch{b(0, 0, ackRenew)}, false},
		{"renew on v2 with IsRenewAck", 2, true, []wireAckBatch{b(0, 0, ackRenew)}, true},
		{"renew mixed with accept", 2, true, []wireAckBatch{b(0, 1, ackRenew, ackAccept)}, true},
		{"IsRenewAck without any renew", 2, true, []wireAckBatch{b(0, 0, ackAccept)}, true},
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
