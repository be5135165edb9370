package persist

import (
	"github.com/sharebroker/sharebroker/acl"
	"github.com/sharebroker/sharebroker/durable"
)

// ACLs in the data directory (docs/durability.md acls-kept): the ACLs kept
// are restored before the listeners bind, and from then on every change
// CreateAcls and DeleteAcls make is written before it is answered.

// restoreACLs gives the authorizer the ACLs the data directory kept and
// has every later change written there. Without an authorizer the kept
// ACLs are left in the directory, unused, as Kafka keeps its ACL records
// whatever authorizer the broker runs.
func (b *Binding) restoreACLs(d *durable.Dir) {
	authz := b.st.Authz
	if authz == nil {
		return
	}
	authz.Restore(fromDurableACLs(d.ACLs()))
	authz.SetJournal(func(created, deleted []acl.Binding) {
		if len(created) > 0 {
			if err := d.AddACLs(durableACLs(created)); err != nil {
				b.cfg.Log.Warn("ACL creation not recorded", "acls", len(created), "err", err)
			}
		}
		if len(deleted) > 0 {
			if err := d.DeleteACLs(durableACLs(deleted)); err != nil {
				b.cfg.Log.Warn("ACL deletion not recorded", "acls", len(deleted), "err", err)
			}
		}
	})
}

func durableACLs(bs []acl.Binding) []durable.ACL {
	out := make([]durable.ACL, len(bs))
	for i, a := range bs {
		out[i] = durable.ACL{ResourceType: int8(a.ResourceType), ResourceName: a.ResourceName,
			PatternType: int8(a.PatternType), Principal: a.Principal, Host: a.Host,
			Operation: int8(a.Operation), Permission: int8(a.Permission)}
	}
	return out
}

func fromDurableACLs(kept []durable.ACL) []acl.Binding {
	out := make([]acl.Binding, len(kept))
	for i, a := range kept {
		out[i] = acl.Binding{ResourceType: acl.ResourceType(a.ResourceType), ResourceName: a.ResourceName,
			PatternType: acl.PatternType(a.PatternType), Principal: a.Principal, Host: a.Host,
			Operation: acl.Operation(a.Operation), Permission: acl.Permission(a.Permission)}
	}
	return out
}
