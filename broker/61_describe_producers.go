package broker

// DescribeProducers (key 61), v0.
//
//   - Per partition, every producer the log keeps idempotence state for:
//     producer ID, epoch, last sequence, last timestamp and the first
//     offset of its open transaction, -1 if none (describe-producers).
//     CoordinatorEpoch is always 0, the one coordinator epoch we have.
//   - An unknown topic or partition answers UNKNOWN_TOPIC_OR_PARTITION;
//     for an unknown topic with the error's own message, for an unknown
//     partition with none, as Kafka does (answers-as-kafka).
//   - Authorization (docs/security.md api-authorization): READ on each
//     topic, else TOPIC_AUTHORIZATION_FAILED with Kafka's message.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/acl"
)

func init() { register(61, 0, 0, handleDescribeProducers) }

func handleDescribeProducers(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.DescribeProducersRequest)
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewDescribeProducersResponseTopic()
		st.Topic = rt.Topic
		t := b.store.Topic(rt.Topic)
		// READ on the topic, checked before whether it exists; the
		// refusal carries its message (an ApiError in Kafka).
		denied := !r.authorized(acl.OpRead, acl.ResourceTopic, rt.Topic)
		for _, p := range rt.Partitions {
			sp := kmsg.NewDescribeProducersResponseTopicPartition()
			sp.Partition = p
			if denied {
				sp.ErrorCode, sp.ErrorMessage = codeFor(errTopicAuthorization), errMessage(errTopicAuthorization)
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			if t == nil || t.Partition(p) == nil {
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				if t == nil {
					// Kafka's KafkaApis answers an unknown topic with
					// ApiError(UNKNOWN_TOPIC_OR_PARTITION), whose message is
					// the error's own; an unknown partition of a known topic
					// comes from ReplicaManager with none (answers-as-kafka).
					sp.ErrorMessage = kmsg.StringPtr(kerr.UnknownTopicOrPartition.Description)
				}
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			for _, info := range t.Partition(p).Producers() {
				ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
				ap.ProducerID, ap.ProducerEpoch = info.ProducerID, int32(info.Epoch)
				ap.LastSequence, ap.LastTimestamp = info.LastSequence, info.LastTimestampMs
				ap.CurrentTxnStartOffset = info.TxnStartOffset
				sp.ActiveProducers = append(sp.ActiveProducers, ap)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
