package persist

import "github.com/sharebroker/sharebroker/durable"

// SCRAM credentials in the data directory (docs/durability.md scram-kept):
// what AlterUserScramCredentials changed is restored over the credentials
// --sasl-user made at start, and from then on every change is written.

// Credentials is the SASL credential store as the binding sees it: SCRAM
// credentials named by durable's key (user, mechanism number) and held as
// durable keeps them, so the store converts to its own form once.
type Credentials interface {
	// RestoreSCRAM applies one kept credential, or a kept deletion when c
	// is nil. A mechanism the store does not serve (written by a newer
	// broker) is skipped.
	RestoreSCRAM(k durable.SCRAMKey, c *durable.SCRAMCredential)
	// SetSCRAMJournal has j told every later change, in the order they
	// are made; a nil credential is a deletion.
	SetSCRAMJournal(j func(k durable.SCRAMKey, c *durable.SCRAMCredential))
}

// restoreSCRAM applies the credentials and deletions the data directory
// kept, then has every later change written there.
func (b *Binding) restoreSCRAM(d *durable.Dir) {
	for k, c := range d.SCRAMCredentials() {
		b.st.Credentials.RestoreSCRAM(k, c)
	}
	b.st.Credentials.SetSCRAMJournal(func(k durable.SCRAMKey, c *durable.SCRAMCredential) {
		var err error
		if c == nil {
			err = d.DeleteSCRAM(k)
		} else {
			err = d.SetSCRAM(k, *c)
		}
		if err != nil {
			b.cfg.Log.Warn("SCRAM credential change not recorded", "user", k.User, "err", err)
		}
	})
}
