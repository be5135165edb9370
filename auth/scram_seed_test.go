package auth

import (
	"errors"
	"testing"
)

// seed-idempotent and seed-conflict for SCRAM users: the password is
// checked against the credential's own salt, so the same password is
// found without storing it; another password or iterations, or a
// --sasl-user of the same name with another password, is a conflict.
func TestEnsureSCRAM(t *testing.T) {
	c, err := NewCredentials([]SASLUser{{Name: "bob", Password: "bob-secret"}})
	if err != nil {
		t.Fatal(err)
	}
	if created, err := c.EnsureSCRAM("alice", MechSCRAM512, "alice-secret", 8192, true); err != nil || created {
		t.Fatalf("validate only: %v %v", created, err)
	}
	if _, ok := c.LookupSCRAM("alice", SCRAMSHA512); ok {
		t.Fatal("validate only made the credential")
	}
	if created, err := c.EnsureSCRAM("alice", MechSCRAM512, "alice-secret", 8192, false); err != nil || !created {
		t.Fatalf("first: %v %v", created, err)
	}
	kept, _ := c.LookupSCRAM("alice", SCRAMSHA512)
	if created, err := c.EnsureSCRAM("alice", MechSCRAM512, "alice-secret", 8192, false); err != nil || created {
		t.Fatalf("again: %v %v", created, err)
	}
	if again, _ := c.LookupSCRAM("alice", SCRAMSHA512); string(again.Salt) != string(kept.Salt) {
		t.Fatal("the same seed salted the password again")
	}
	for _, tc := range []struct {
		user, password string
		iterations     int32
	}{{"alice", "other", 8192}, {"alice", "alice-secret", 4096}, {"bob", "not-bob-secret", 0}} {
		if _, err := c.EnsureSCRAM(tc.user, MechSCRAM512, tc.password, tc.iterations, false); !errors.Is(err, ErrCredentialConflict) {
			t.Errorf("%s with %q, %d iterations: %v, want a conflict", tc.user, tc.password, tc.iterations, err)
		}
	}
	if _, err := c.EnsureSCRAM("bob", MechSCRAM256, "bob-secret", 0, false); err != nil {
		t.Errorf("bob's --sasl-user credential with the same password: %v", err)
	}
	for _, bad := range []struct {
		user, mech, password string
		iterations           int32
		want                 error
	}{
		{"", MechSCRAM256, "pw", 0, ErrUnacceptableCredential},
		{"u", "SCRAM-SHA-1", "pw", 0, ErrUnsupportedMechanism},
		{"u", MechSCRAM256, "pw", 20000, ErrUnacceptableCredential},
		{"u", MechSCRAM256, "", 0, ErrUnacceptableCredential},
	} {
		if _, err := c.EnsureSCRAM(bad.user, bad.mech, bad.password, bad.iterations, false); !errors.Is(err, bad.want) {
			t.Errorf("%+v: %v, want %v", bad, err, bad.want)
		}
	}
}
