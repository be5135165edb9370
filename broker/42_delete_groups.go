package broker

// DeleteGroups (key 42), v0-v2.
//
//   - A share group with no members is deleted, with every share partition
//     it holds; its group configs stay, as configs exist without a group.
//   - Members present answer NON_EMPTY_GROUP; an unknown ID, or one of
//     another kind of group, GROUP_ID_NOT_FOUND.
//   - Classic and consumer groups arrive with the group coordinator.

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(42, 0, 2, handleDeleteGroups) }

func handleDeleteGroups(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.DeleteGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	for _, id := range req.Groups {
		g := kmsg.NewDeleteGroupsResponseGroup()
		g.Group = id
		err := b.shareGroups.Delete(id)
		if err == nil {
			b.shareParts.dropGroup(id)
		}
		g.ErrorCode, g.ErrorMessage = codeFor(err), errMessage(err)
		resp.Groups = append(resp.Groups, g)
	}
	return resp, nil
}
