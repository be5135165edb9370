package broker

import "github.com/sharebroker/sharebroker/durable"

// scramBinding is the SASL credentials as persist restores and journals
// them (docs/durability.md scram-kept): durable's keys and credentials
// turned into the credentials' own.
type scramBinding struct{ c *credentials }

// RestoreSCRAM applies a kept credential, or a kept deletion.
func (s scramBinding) RestoreSCRAM(k durable.SCRAMKey, cred *durable.SCRAMCredential) {
	m := scramMechanism(k.Mechanism)
	if !m.valid() {
		return // written by a newer broker with a mechanism we do not serve
	}
	if cred == nil {
		s.c.deleteSCRAM(k.User, m)
		return
	}
	s.c.setSCRAM(k.User, m, scramCredential{salt: cred.Salt, iterations: cred.Iterations,
		storedKey: cred.StoredKey, serverKey: cred.ServerKey})
}

// SetSCRAMJournal has j told every later change, under the credentials'
// lock so the data directory sees them in order.
func (s scramBinding) SetSCRAMJournal(j func(k durable.SCRAMKey, cred *durable.SCRAMCredential)) {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	s.c.journal = func(name string, m scramMechanism, cred *scramCredential) {
		k := durable.SCRAMKey{User: name, Mechanism: int8(m)}
		if cred == nil {
			j(k, nil)
			return
		}
		j(k, &durable.SCRAMCredential{Salt: cred.salt, StoredKey: cred.storedKey,
			ServerKey: cred.serverKey, Iterations: cred.iterations})
	}
}
