package broker

import (
	"github.com/sharebroker/sharebroker/group"
	"github.com/sharebroker/sharebroker/storage"
)

// topicInfo resolves a topic for the share-group coordinator.
func (b *Broker) topicInfo(name string) (group.TopicInfo, bool) {
	t := b.store.Topic(name)
	if t == nil {
		return group.TopicInfo{}, false
	}
	return topicInfoOf(t), true
}

func topicInfoOf(t *storage.Topic) group.TopicInfo {
	return group.TopicInfo{Name: t.Name, ID: t.ID, Partitions: int32(len(t.Partitions()))}
}
