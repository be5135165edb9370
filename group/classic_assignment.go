package group

import "encoding/binary"

// AssignedTopic is one topic of a classic consumer's assignment.
type AssignedTopic struct {
	Topic      string
	Partitions []int32
}

// ClassicConsumerAssignment reads the partitions of a consumer protocol
// assignment, the bytes a classic group's leader hands each member in
// SyncGroup (Kafka's ConsumerProtocolAssignment, versions 0-3: int16
// version, then an array of {int16-length topic, array of int32
// partitions}; user data and later fields follow and are not read). ok is
// false for bytes of another protocol type or a short or malformed
// assignment; an empty assignment is ok with no topics.
func ClassicConsumerAssignment(b []byte) (topics []AssignedTopic, ok bool) {
	if len(b) < 6 || int16(binary.BigEndian.Uint16(b)) < 0 {
		return nil, false
	}
	n := int32(binary.BigEndian.Uint32(b[2:]))
	b = b[6:]
	if n < 0 || int(n) > len(b)/6 { // each topic takes at least 6 bytes
		return nil, false
	}
	topics = make([]AssignedTopic, 0, n)
	for range n {
		if len(b) < 2 {
			return nil, false
		}
		l := int16(binary.BigEndian.Uint16(b))
		b = b[2:]
		if l < 0 || int(l)+4 > len(b) {
			return nil, false
		}
		t := AssignedTopic{Topic: string(b[:l])}
		b = b[l:]
		np := int32(binary.BigEndian.Uint32(b))
		b = b[4:]
		if np < 0 || int(np) > len(b)/4 {
			return nil, false
		}
		t.Partitions = make([]int32, np)
		for i := range t.Partitions {
			t.Partitions[i] = int32(binary.BigEndian.Uint32(b[4*i:]))
		}
		b = b[4*np:]
		topics = append(topics, t)
	}
	return topics, true
}

// ClassicConsumerSubscription reads the topics of a consumer protocol
// subscription, the metadata a classic consumer joins with; ok is false
// for bytes of another protocol type.
func ClassicConsumerSubscription(b []byte) (topics []string, ok bool) {
	return consumerSubscriptionTopics(b)
}
