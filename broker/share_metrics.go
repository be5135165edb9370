package broker

import (
	"errors"

	"github.com/sharebroker/sharebroker/broker/internal/shareserve"
	"github.com/sharebroker/sharebroker/storage"
)

// What a share request counts in the per-topic share metrics: each topic
// once per request, and only while the topic exists (the metrics package,
// ShareFetchRequest and ShareAckRequest).

// countShareFetch counts one ShareFetch that went on to acquire (Kafka's
// SharePartitionManager.processShareFetch): once for each existing topic
// among the partitions it fetched, and once more as failed for each topic
// one of whose partitions answered an error. Topics are deduplicated by
// scanning the earlier partitions: a session names few, and nothing is
// allocated.
func (b *Broker) countShareFetch(node int32, parts []shareserve.SessionPartition, f *shareserve.Fetch) {
	for i := range parts {
		id := parts[i].TopicID
		if seenTopic(parts[:i], id) || b.store.TopicByID(id) == nil {
			continue
		}
		failed := false
		for j := i; j < len(parts) && !failed; j++ {
			if parts[j].TopicID == id {
				a := f.Answer(parts[j].TopicPartition)
				failed = a != nil && a.Err != nil
			}
		}
		b.metrics.ShareFetchRequest(node, id, failed)
	}
}

func seenTopic(parts []shareserve.SessionPartition, id storage.TopicID) bool {
	for i := range parts {
		if parts[i].TopicID == id {
			return true
		}
	}
	return false
}

// ackOutcome folds one partition's acknowledgement result into its
// topic's: counted unless the batches broke a request-level rule (Kafka's
// KafkaApis answers those before SharePartitionManager.acknowledge counts
// anything), failed if counted and refused.
func ackOutcome(counted, failed bool, err error) (bool, bool) {
	if errors.Is(err, shareserve.ErrInvalidRequest) {
		return counted, failed
	}
	return true, failed || err != nil
}

// countShareAcks counts one request's acknowledgements of one topic, as
// ackOutcome folded them.
func (b *Broker) countShareAcks(node int32, id storage.TopicID, counted, failed bool) {
	if !counted || b.store.TopicByID(id) == nil {
		return
	}
	b.metrics.ShareAckRequest(node, id, failed)
}

// countShareFetchAcks counts the acknowledgements a ShareFetch carried,
// once per topic, as countShareAcks.
func (b *Broker) countShareFetchAcks(node int32, acked []shareserve.TopicPartition, f *shareserve.Fetch) {
	for i, tp := range acked {
		if seenAckTopic(acked[:i], tp.TopicID) {
			continue
		}
		counted, failed := false, false
		for _, other := range acked[i:] {
			if other.TopicID == tp.TopicID {
				counted, failed = ackOutcome(counted, failed, f.Answer(other).AckErr)
			}
		}
		b.countShareAcks(node, tp.TopicID, counted, failed)
	}
}

func seenAckTopic(tps []shareserve.TopicPartition, id storage.TopicID) bool {
	for _, tp := range tps {
		if tp.TopicID == id {
			return true
		}
	}
	return false
}
