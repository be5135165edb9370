package group

import (
	"fmt"
	"slices"
)

// ClassicDescribedGroup is one group in DescribeGroups (describe). When Err is
// set (ErrGroupIDNotFound) the group is reported Dead with no members.
type ClassicDescribedGroup struct {
	GroupID      string
	Err          error
	State        ClassicGroupState
	ProtocolType string
	Protocol     string
	Members      []ClassicDescribedMember // in join order
}

// ClassicDescribedMember is one member in DescribeGroups. Metadata and
// Assignment are set only in Stable and CompletingRebalance.
type ClassicDescribedMember struct {
	MemberID   string
	InstanceID *string
	ClientID   string
	ClientHost string
	Metadata   []byte
	Assignment []byte
}

// Describe describes classic group id. An unknown ID, or one of another
// group type, is Dead with ErrGroupIDNotFound.
func (s *ClassicGroups) Describe(id string) ClassicDescribedGroup {
	d := ClassicDescribedGroup{GroupID: id, State: ClassicDead}
	err := s.withGroup(id, false, nil, func(g *classicGroup) error {
		d.State, d.ProtocolType, d.Protocol = g.state, g.protocolType, g.protocol
		withData := g.state == ClassicStable || g.state == ClassicCompletingRebalance
		d.Members = make([]ClassicDescribedMember, 0, len(g.order))
		for _, mid := range g.order {
			m := g.members[mid]
			md := ClassicDescribedMember{MemberID: m.id, InstanceID: m.instanceID, ClientID: m.clientID, ClientHost: m.clientHost}
			if withData {
				md.Metadata = slices.Clone(m.metadataFor(g.protocol))
				md.Assignment = slices.Clone(m.assignment)
			}
			d.Members = append(d.Members, md)
		}
		return nil
	})
	if err != nil {
		d.Err = fmt.Errorf("%w: group %s is not a classic group", ErrGroupIDNotFound, id)
	}
	return d
}

// ClassicListedGroup is one classic group in ListGroups.
type ClassicListedGroup struct {
	GroupID      string
	ProtocolType string
	State        ClassicGroupState
}

// List returns every classic group, sorted by ID (list).
func (s *ClassicGroups) List() []ClassicListedGroup {
	return listLive(&s.coordinator, func(g *classicGroup) ClassicListedGroup {
		return ClassicListedGroup{GroupID: g.id, ProtocolType: g.protocolType, State: g.state}
	})
}

// Delete removes a classic group without members, offsets included
// (delete).
func (s *ClassicGroups) Delete(id string) error { return s.deleteEmpty(id, s.removeLocked) }
