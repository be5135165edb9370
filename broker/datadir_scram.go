package broker

import (
	"github.com/sharebroker/sharebroker/auth"
	"github.com/sharebroker/sharebroker/durable"
)

// scramBinding is the SASL credentials as persist restores and journals
// them (docs/durability.md scram-kept): durable's keys and credentials
// turned into auth's own.
type scramBinding struct{ c *auth.Credentials }

// RestoreSCRAM applies a kept credential, or a kept deletion.
func (s scramBinding) RestoreSCRAM(k durable.SCRAMKey, cred *durable.SCRAMCredential) {
	m := auth.SCRAMMechanism(k.Mechanism)
	if !m.Valid() {
		return // written by a newer broker with a mechanism we do not serve
	}
	if cred == nil {
		s.c.DeleteSCRAM(k.User, m)
		return
	}
	s.c.SetSCRAM(k.User, m, auth.SCRAMCredential(*cred))
}

// SetSCRAMJournal has j told every later change; the credentials call it
// under their lock, so the data directory sees the changes in order.
func (s scramBinding) SetSCRAMJournal(j func(k durable.SCRAMKey, cred *durable.SCRAMCredential)) {
	s.c.SetJournal(func(name string, m auth.SCRAMMechanism, cred *auth.SCRAMCredential) {
		k := durable.SCRAMKey{User: name, Mechanism: int8(m)}
		if cred == nil {
			j(k, nil)
			return
		}
		kept := durable.SCRAMCredential(*cred)
		j(k, &kept)
	})
}
