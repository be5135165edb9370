package broker

// The broker's side of the console's endpoints (httpapi.ConsoleState and
// httpapi.Producer): thin reads of the group coordinators and one append.

import (
	"fmt"

	"github.com/sharebroker/sharebroker/cluster"
	"github.com/sharebroker/sharebroker/group"
	"github.com/sharebroker/sharebroker/storage"
)

func (s httpState) ClassicGroups() []group.ClassicListedGroup { return s.classicGroups.List() }

func (s httpState) DescribeClassicGroup(id string) group.ClassicDescribedGroup {
	return s.classicGroups.Describe(id)
}

func (s httpState) ConsumerGroups() []group.ConsumerListedGroup { return s.consumerGroups.List() }

func (s httpState) DescribeConsumerGroups(ids []string) []group.ConsumerDescribedGroup {
	return s.consumerGroups.Describe(ids)
}

// CommittedOffsets is an admin OffsetFetch of every topic: the consumer
// group's offsets if id is one, else the classic group's (none for an
// unknown ID).
func (s httpState) CommittedOffsets(id string) []group.FetchedTopic {
	if out, err := s.consumerGroups.Fetch(id, nil, -1, nil, false); err == nil {
		return out
	}
	out, _ := s.classicGroups.Fetch(id, nil)
	return out
}

// Produce appends rec as a Produce request without a producer ID would,
// under the topic's settings; leadership is not checked (the test API
// speaks for the whole cluster).
func (s httpState) Produce(topic string, partition int32, rec storage.Record) (int64, error) {
	t := s.store.Topic(topic)
	var p *storage.Partition
	if t != nil {
		p = t.Partition(partition)
	}
	if p == nil {
		return -1, fmt.Errorf("%w: %s-%d", cluster.ErrUnknownPartition, topic, partition)
	}
	tc := s.topicConfig(t)
	res, err := p.Append(storage.BuildBatch([]storage.Record{rec}), storage.AppendOptions{
		MaxMessageBytes: tc.MaxMessageBytes, LogAppendTime: tc.LogAppendTime, NowMs: s.clock.Now().UnixMilli()})
	return res.BaseOffset, err
}
