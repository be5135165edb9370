package group

import (
	"fmt"
	"sync"
)

// Type is the kind of group that owns a group ID.
type Type uint8

// Group types. The zero Type means "no group".
const (
	TypeClassic Type = iota + 1
	TypeConsumer
	TypeShare
	TypeStreams
)

// String returns Kafka's lowercase group type name, as ListGroups reports it.
func (t Type) String() string {
	switch t {
	case TypeClassic:
		return "classic"
	case TypeConsumer:
		return "consumer"
	case TypeShare:
		return "share"
	case TypeStreams:
		return "streams"
	}
	return "unknown"
}

// Registry maps group IDs to the type of group using them, so one ID is never
// two kinds of group at once. It is safe for concurrent use; callers may
// hold a group's lock while calling it, never the other way round.
type Registry struct {
	// convert serialises conversions between classic and KIP-848 groups
	// (migration.go); a conversion takes it before any coordinator lock.
	convert sync.Mutex

	mu    sync.Mutex // guards types
	types map[string]Type
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{types: make(map[string]Type)}
}

// TypeOf reports the type of the group using id, if any.
func (r *Registry) TypeOf(id string) (Type, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.types[id]
	return t, ok
}

// Check reports whether a request of group type want may use id: nil when
// id is free or already of type want, else the error Kafka answers with.
func (r *Registry) Check(id string, want Type) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.checkLocked(id, want)
}

// Claim records id as a group of type want, or fails as Check does.
func (r *Registry) Claim(id string, want Type) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.checkLocked(id, want); err != nil {
		return err
	}
	r.types[id] = want
	return nil
}

// Release forgets id if it is a group of type t.
func (r *Registry) Release(id string, t Type) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.types[id] == t {
		delete(r.types, id)
	}
}

// transfer moves id from type from to type to in one step, so no other
// kind of group can claim it in between; it reports whether id was of type
// from.
func (r *Registry) transfer(id string, from, to Type) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.types[id] != from {
		return false
	}
	r.types[id] = to
	return true
}

func (r *Registry) checkLocked(id string, want Type) error {
	have, ok := r.types[id]
	if !ok || have == want {
		return nil
	}
	return typeMismatch(id, have, want)
}

// typeMismatch is the error for using a group of type have as type want.
// Kafka answers GROUP_ID_NOT_FOUND almost everywhere, but a classic
// JoinGroup on a share group gets INCONSISTENT_GROUP_PROTOCOL
// (share-groups.md §5.4).
func typeMismatch(id string, have, want Type) error {
	if want == TypeClassic && have == TypeShare {
		return fmt.Errorf("%w: group %s is a share group", ErrInconsistentGroupProtocol, id)
	}
	return fmt.Errorf("%w: group %s is not a %s group", ErrGroupIDNotFound, id, want)
}
