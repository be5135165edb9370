package broker

import (
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
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
