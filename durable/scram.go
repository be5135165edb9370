package durable

import (
	"cmp"
	"maps"
	"slices"
)

// SCRAM credentials in the metadata log, as Kafka's metadata log keeps
// them in UserScramCredentialRecord and RemoveUserScramCredentialRecord:
// the salt, the iteration count, and the stored and server keys derived
// from the salted password (RFC 5802) — never a password, nor the salted
// password (docs/durability.md scram-kept).

// SCRAMKey names one credential: a user and a mechanism (1 SCRAM-SHA-256,
// 2 SCRAM-SHA-512, as the SCRAM credential APIs number them).
type SCRAMKey struct {
	User      string
	Mechanism int8
}

// SCRAMCredential is one stored credential.
type SCRAMCredential struct {
	Salt, StoredKey, ServerKey []byte
	Iterations                 int32
}

// SetSCRAM records a credential, created or replaced.
func (d *Dir) SetSCRAM(k SCRAMKey, c SCRAMCredential) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.meta.append(metaRecord{Op: opSCRAM, User: k.User, Mechanism: k.Mechanism,
		Salt: c.Salt, StoredKey: c.StoredKey, ServerKey: c.ServerKey, Iterations: c.Iterations})
}

// DeleteSCRAM records a credential's deletion. The deletion itself is kept
// (compact-on-start writes it again): a credential the broker's
// configuration creates at every start stays deleted.
func (d *Dir) DeleteSCRAM(k SCRAMKey) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.meta.append(metaRecord{Op: opSCRAMDelete, User: k.User, Mechanism: k.Mechanism})
}

// SCRAMCredentials returns the credentials recovered; a nil value is a
// deletion.
func (d *Dir) SCRAMCredentials() map[SCRAMKey]*SCRAMCredential {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[SCRAMKey]*SCRAMCredential, len(d.scram))
	for k, c := range d.scram {
		if c != nil {
			cc := *c
			c = &cc
		}
		out[k] = c
	}
	return out
}

func replaySCRAM(m map[SCRAMKey]*SCRAMCredential, r metaRecord) {
	k := SCRAMKey{User: r.User, Mechanism: r.Mechanism}
	if r.Op == opSCRAMDelete {
		m[k] = nil
		return
	}
	m[k] = &SCRAMCredential{Salt: r.Salt, StoredKey: r.StoredKey, ServerKey: r.ServerKey, Iterations: r.Iterations}
}

func appendSCRAM(b []byte, m map[SCRAMKey]*SCRAMCredential) []byte {
	keys := slices.SortedFunc(maps.Keys(m), func(x, y SCRAMKey) int {
		return cmp.Or(cmp.Compare(x.User, y.User), cmp.Compare(x.Mechanism, y.Mechanism))
	})
	for _, k := range keys {
		if c := m[k]; c == nil {
			b = appendMetaRecord(b, metaRecord{Op: opSCRAMDelete, User: k.User, Mechanism: k.Mechanism})
		} else {
			b = appendMetaRecord(b, metaRecord{Op: opSCRAM, User: k.User, Mechanism: k.Mechanism,
				Salt: c.Salt, StoredKey: c.StoredKey, ServerKey: c.ServerKey, Iterations: c.Iterations})
		}
	}
	return b
}
