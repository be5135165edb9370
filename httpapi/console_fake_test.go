package httpapi

import (
	"fmt"

	"github.com/sharebroker/sharebroker/cluster"
	"github.com/sharebroker/sharebroker/group"
	"github.com/sharebroker/sharebroker/storage"
)

// The console's part of the fake broker (httpapi_test.go): no classic or
// consumer groups, and records appended to the fake's store.

func (f *fake) ClassicGroups() []group.ClassicListedGroup { return nil }
func (f *fake) DescribeClassicGroup(id string) group.ClassicDescribedGroup {
	return group.ClassicDescribedGroup{GroupID: id, Err: fmt.Errorf("no group %s", id)}
}
func (f *fake) ConsumerGroups() []group.ConsumerListedGroup { return nil }
func (f *fake) DescribeConsumerGroups(ids []string) []group.ConsumerDescribedGroup {
	out := make([]group.ConsumerDescribedGroup, len(ids))
	for i, id := range ids {
		out[i] = group.ConsumerDescribedGroup{GroupID: id, Err: fmt.Errorf("no group %s", id)}
	}
	return out
}
func (f *fake) CommittedOffsets(string) []group.FetchedTopic { return nil }
func (f *fake) Produce(topic string, partition int32, rec storage.Record) (int64, error) {
	t := f.store.Topic(topic)
	if t == nil || t.Partition(partition) == nil {
		return -1, fmt.Errorf("%w: %s-%d", cluster.ErrUnknownPartition, topic, partition)
	}
	res, err := t.Partition(partition).Append(storage.BuildBatch([]storage.Record{rec}), storage.AppendOptions{})
	return res.BaseOffset, err
}
