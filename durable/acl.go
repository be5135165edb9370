package durable

import "slices"

// ACLs in the metadata log, as Kafka's metadata log keeps them in
// AccessControlEntryRecord and RemoveAccessControlEntryRecord
// (docs/durability.md acls-kept). One record holds the ACLs one
// CreateAcls or DeleteAcls request changed, so a request's changes reach
// the file together or not at all.

// ACL is one ACL binding, its codes Kafka's (the acl package's).
type ACL struct {
	ResourceType int8   `json:"resource_type"`
	ResourceName string `json:"resource_name"`
	PatternType  int8   `json:"pattern_type"`
	Principal    string `json:"principal"`
	Host         string `json:"host"`
	Operation    int8   `json:"operation"`
	Permission   int8   `json:"permission"`
}

// aclsPerRecord bounds the ACLs a snapshot writes in one record, far
// under maxMetaRecordBytes.
const aclsPerRecord = 1000

// AddACLs records ACLs created.
func (d *Dir) AddACLs(acls []ACL) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.meta.append(metaRecord{Op: opACL, ACLs: acls})
}

// DeleteACLs records ACLs deleted.
func (d *Dir) DeleteACLs(acls []ACL) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.meta.append(metaRecord{Op: opACLDelete, ACLs: acls})
}

// ACLs returns the ACLs recovered, in creation order.
func (d *Dir) ACLs() []ACL {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.acls)
}

// replayACLs applies one record to the ACLs held, in creation order; an
// ACL is held once.
func replayACLs(held []ACL, r metaRecord) []ACL {
	if r.Op == opACLDelete {
		return slices.DeleteFunc(held, func(a ACL) bool { return slices.Contains(r.ACLs, a) })
	}
	for _, a := range r.ACLs {
		if !slices.Contains(held, a) {
			held = append(held, a)
		}
	}
	return held
}

func appendACLs(b []byte, acls []ACL) []byte {
	for chunk := range slices.Chunk(acls, aclsPerRecord) {
		b = appendMetaRecord(b, metaRecord{Op: opACL, ACLs: chunk})
	}
	return b
}
