package broker

import (
	"github.com/sharebroker/sharebroker/auth"
	"github.com/sharebroker/sharebroker/durable"
)

// SCRAM credentials in the data directory (docs/durability.md scram-kept):
// what AlterUserScramCredentials changed is restored over the credentials
// --sasl-user made at start, and from then on every change is written.

// restoreSCRAM applies the credentials and deletions the data directory
// kept, then has every later change written there.
func (b *Broker) restoreSCRAM(d *durable.Dir) {
	creds := b.authn.Credentials
	for k, cred := range d.SCRAMCredentials() {
		m := auth.SCRAMMechanism(k.Mechanism)
		if !m.Valid() {
			continue // written by a newer broker with a mechanism we do not serve
		}
		if cred == nil {
			creds.DeleteSCRAM(k.User, m)
			continue
		}
		creds.SetSCRAM(k.User, m, auth.SCRAMCredential(*cred))
	}
	creds.SetJournal(func(name string, m auth.SCRAMMechanism, cred *auth.SCRAMCredential) {
		k := durable.SCRAMKey{User: name, Mechanism: int8(m)}
		var err error
		if cred == nil {
			err = d.DeleteSCRAM(k)
		} else {
			err = d.SetSCRAM(k, durable.SCRAMCredential(*cred))
		}
		if err != nil {
			b.log.Warn("SCRAM credential change not recorded", "user", name, "err", err)
		}
	})
}
