package broker

// ListGroups (key 16), v0-v5.
//
//   - Every group the broker coordinates (groups.md list). Classic groups
//     are listed with their protocol type ("consumer" for consumers, empty
//     for a group made by simple commits), GroupType "classic" (v5+) and
//     their state (v4+). Share groups are listed with ProtocolType "share",
//     GroupType "share" and their state, Empty or Stable.
//   - StatesFilter (v4+) and TypesFilter (v5+) compare case-insensitively;
//     an empty filter matches everything, an unknown name nothing.
//   - KIP-848 consumer groups are listed with ProtocolType "consumer",
//     GroupType "consumer" and their state (Empty, Assigning,
//     Reconciling, Stable).
//   - Authorization (docs/security.md api-authorization): DESCRIBE on
//     CLUSTER lists every group; without it only the groups the principal
//     may DESCRIBE are listed.

import (
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/acl"
	"github.com/sharebroker/sharebroker/cluster"
)

func init() { register(16, 0, 5, handleListGroups) }

func handleListGroups(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.ListGroupsRequest)
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	// DESCRIBE on CLUSTER lists every group; without it, those the
	// principal may describe (asked quietly, as Kafka does).
	all := r.authorizedQuietly(acl.OpDescribe, acl.ResourceCluster, acl.ClusterName)
	matches := func(filter []string, value string) bool {
		return len(filter) == 0 || slices.ContainsFunc(filter, func(f string) bool { return strings.EqualFold(f, value) })
	}
	add := func(id, protocolType, state, groupType string) {
		if !b.coordinates(r.conn, cluster.Group, id) {
			return // another node lists it
		}
		if !matches(req.StatesFilter, state) || !matches(req.TypesFilter, groupType) {
			return
		}
		if !all && !r.authorizedQuietly(acl.OpDescribe, acl.ResourceGroup, id) {
			return
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.ProtocolType, lg.GroupState, lg.GroupType = id, protocolType, state, groupType
		resp.Groups = append(resp.Groups, lg)
	}
	for _, g := range b.classicGroups.List() {
		add(g.GroupID, g.ProtocolType, string(g.State), "classic")
	}
	for _, g := range b.consumerGroups.List() {
		add(g.GroupID, "consumer", string(g.State), "consumer")
	}
	for _, g := range b.shareGroups.List() {
		add(g.GroupID, "share", string(g.State), "share")
	}
	return resp, nil
}
