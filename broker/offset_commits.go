package broker

import (
	"github.com/sharebroker/sharebroker/acl"
	"github.com/sharebroker/sharebroker/group"
)

// What OffsetCommit and TxnOffsetCommit do alike around the group's
// commit: which request topics reach the group, and which error each
// partition of the answer carries.

// commitTopics makes the topics of an offset commit the group sees: each
// of the request's n topics is named (commitTopicName; topic gives its
// name and ID) and needs READ, and partitions gives its partitions in
// domain terms. topicErr[i] holds why topic i is kept from the group
// (UNKNOWN_TOPIC_ID, TOPIC_AUTHORIZATION_FAILED). A request refused as a
// whole (denied) looks at no topic.
func (b *Broker) commitTopics(r *request, denied, byID bool, n int, topic func(i int) (string, [16]byte),
	partitions func(i int) []group.CommitPartition) (topics []group.CommitTopic, topicErr []error) {
	topicErr = make([]error, n)
	for i := range n {
		if denied {
			break
		}
		name, id := topic(i)
		name, err := b.commitTopicName(byID, name, id)
		if err == nil && !r.authorized(acl.OpRead, acl.ResourceTopic, name) {
			err = errTopicAuthorization
		}
		if err != nil {
			topicErr[i] = err
			continue
		}
		topics = append(topics, group.CommitTopic{Topic: name, Partitions: partitions(i)})
	}
	return topics, topicErr
}

// commitAnswers spreads an offset commit's outcome over the request's
// partitions, in request order: partitions(i) is how many request topic i
// has. Topic i's partitions answer topicErr[i] when set (a topic the
// group never saw), else err, the request's as a whole (a refusal,
// NOT_COORDINATOR, the transaction's or the group's own), else the
// group's answer for each: errs holds one row per topic the group saw, in
// request order.
func commitAnswers(topicErr []error, err error, errs [][]error, partitions func(i int) int) [][]error {
	out := make([][]error, len(topicErr))
	next := 0 // index into errs
	for i := range out {
		row := make([]error, partitions(i))
		switch {
		case topicErr[i] != nil:
			fill(row, topicErr[i])
		case err != nil:
			fill(row, err)
		default:
			copy(row, errs[next])
		}
		if topicErr[i] == nil {
			next++
		}
		out[i] = row
	}
	return out
}

func fill(row []error, err error) {
	for j := range row {
		row[j] = err
	}
}
