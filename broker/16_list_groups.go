package broker

// ListGroups (key 16), v0-v5.
//
//   - Every group the broker coordinates. Share groups are listed with
//     ProtocolType "share", GroupType "share" (v5+) and their state, Empty
//     or Stable (v4+).
//   - StatesFilter (v4+) and TypesFilter (v5+) compare case-insensitively;
//     an empty filter matches everything, an unknown name nothing.
//   - Classic and consumer groups arrive with the group coordinator.

import (
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(16, 0, 5, handleListGroups) }

func handleListGroups(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.ListGroupsRequest)
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	matches := func(filter []string, value string) bool {
		return len(filter) == 0 || slices.ContainsFunc(filter, func(f string) bool { return strings.EqualFold(f, value) })
	}
	for _, g := range b.shareGroups.List() {
		if !matches(req.StatesFilter, string(g.State)) || !matches(req.TypesFilter, "share") {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.ProtocolType, lg.GroupState, lg.GroupType = g.GroupID, "share", string(g.State), "share"
		resp.Groups = append(resp.Groups, lg)
	}
	return resp, nil
}
