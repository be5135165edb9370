package broker

// DeleteGroups (key 42), v0-v3.
//
//   - A group with no members is deleted (groups.md delete): a classic
//     group with its committed offsets; a share group with every share
//     partition it holds. Group configs stay, as configs exist without a
//     group.
//   - Members present answer NON_EMPTY_GROUP; an unknown ID
//     GROUP_ID_NOT_FOUND.
//   - A KIP-848 consumer group is deleted with its committed offsets.
//   - v3 (KIP-1331, Kafka 4.4) adds a per-group ErrorMessage: null for a
//     group deleted, the refusal's text otherwise (delete-groups-v3).
//     GROUP_DELETION_FAILED, which v3 brings for streams groups whose
//     topology plugin fails, never arises: no streams groups are served.
//   - Authorization (docs/security.md api-authorization): DELETE on each
//     group, else GROUP_AUTHORIZATION_FAILED.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/acl"

	"github.com/sharebroker/sharebroker/group"
)

func init() { register(42, 0, 3, handleDeleteGroups) }

func handleDeleteGroups(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.DeleteGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	for _, id := range req.Groups {
		g := kmsg.NewDeleteGroupsResponseGroup()
		g.Group = id
		err := b.groupGate(r, acl.OpDelete, id)
		switch t, _ := b.groupRegistry.TypeOf(id); {
		case err != nil:
		case t == group.TypeClassic:
			err = b.classicGroups.Delete(id)
		case t == group.TypeConsumer:
			err = b.consumerGroups.Delete(id)
		default:
			if err = b.shareGroups.Delete(id); err == nil {
				b.shareServing.DropGroup(id)
				b.shareServing.ForgetDeadLetters(id) // its dead-letter series go with it (dlq-metric)
			}
		}
		g.ErrorCode, g.ErrorMessage = codeFor(err), errMessage(err) // v3+ on the wire
		resp.Groups = append(resp.Groups, g)
	}
	return resp, nil
}
