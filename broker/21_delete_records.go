package broker

// DeleteRecords (key 21), v0-v2.
//
//   - Each partition's log start offset moves up to the given offset; -1
//     means the high watermark. Whole batches below it are dropped; a
//     batch that straddles it stays, but reads start at the new log start.
//   - An offset beyond the high watermark (or below -1) answers
//     OFFSET_OUT_OF_RANGE; an unknown topic or partition
//     UNKNOWN_TOPIC_OR_PARTITION. Both report LowWatermark -1.
//   - An offset at or below the current log start changes nothing and
//     answers the current log start.
//   - A node that does not lead the partition answers
//     NOT_LEADER_OR_FOLLOWER (not-leader), LowWatermark -1.
//   - Authorization (docs/security.md api-authorization): DELETE on each
//     topic, else its partitions TOPIC_AUTHORIZATION_FAILED.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/acl"
	"github.com/sharebroker/sharebroker/storage"
)

func init() { register(21, 0, 2, handleDeleteRecords) }

func handleDeleteRecords(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.DeleteRecordsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewDeleteRecordsResponseTopic()
		st.Topic = rt.Topic
		t := b.store.Topic(rt.Topic)
		// DELETE on the topic, checked before whether it exists.
		denied := !r.authorized(acl.OpDelete, acl.ResourceTopic, rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewDeleteRecordsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LowWatermark = -1
			var p *storage.Partition
			if t != nil {
				p = t.Partition(rp.Partition)
			}
			var err error
			if denied {
				err = errTopicAuthorization
			} else if p == nil {
				err = fmt.Errorf("%w: %s-%d", storage.ErrUnknownTopic, rt.Topic, rp.Partition)
			} else if _, code := b.checkLeader(r.conn.node(), t, p.Index, noEpoch); code != 0 {
				sp.ErrorCode = code
				st.Partitions = append(st.Partitions, sp)
				continue
			} else {
				var low int64
				if low, err = p.DeleteRecordsBefore(rp.Offset); err == nil {
					sp.LowWatermark = low
				}
			}
			sp.ErrorCode = codeFor(err)
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
