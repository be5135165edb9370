package broker

import "github.com/sharebroker/sharebroker/durable"

// SCRAM credentials in the data directory (docs/durability.md scram-kept):
// what AlterUserScramCredentials changed is restored over the credentials
// --sasl-user made at start, and from then on every change is written.

// restoreSCRAM applies the credentials and deletions the data directory
// kept, then has every later change written there.
func (b *Broker) restoreSCRAM(d *durable.Dir) {
	for k, cred := range d.SCRAMCredentials() {
		m := scramMechanism(k.Mechanism)
		if !m.valid() {
			continue // written by a newer broker with a mechanism we do not serve
		}
		if cred == nil {
			b.creds.deleteSCRAM(k.User, m)
			continue
		}
		b.creds.setSCRAM(k.User, m, scramCredential{salt: cred.Salt, iterations: cred.Iterations,
			storedKey: cred.StoredKey, serverKey: cred.ServerKey})
	}
	b.creds.mu.Lock()
	defer b.creds.mu.Unlock()
	b.creds.journal = func(name string, m scramMechanism, cred *scramCredential) {
		k := durable.SCRAMKey{User: name, Mechanism: int8(m)}
		var err error
		if cred == nil {
			err = d.DeleteSCRAM(k)
		} else {
			err = d.SetSCRAM(k, durable.SCRAMCredential{Salt: cred.salt, StoredKey: cred.storedKey,
				ServerKey: cred.serverKey, Iterations: cred.iterations})
		}
		if err != nil {
			b.log.Warn("SCRAM credential change not recorded", "user", name, "err", err)
		}
	}
}
