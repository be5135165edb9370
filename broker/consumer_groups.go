package broker

// topicNames lists every topic, for regex subscriptions.
func (b *Broker) topicNames() []string {
	topics := b.store.Topics()
	names := make([]string, len(topics))
	for i, t := range topics {
		names[i] = t.Name
	}
	return names
}
