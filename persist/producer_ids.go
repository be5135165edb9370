package persist

// producerIDBlock is how many producer IDs one metadata-log record
// reserves, as Kafka's ProducerIdsRecord hands them out in blocks of 1000
// (producer-ids-reserved).
const producerIDBlock = 1000

// NewProducerID hands out an idempotent or transactional producer ID. With
// a data directory, IDs come from blocks reserved in the metadata log first
// (producer-ids-reserved), and recovery starts them past every ID the
// directory reserved or a log holds.
func (b *Binding) NewProducerID() int64 {
	if b.dir == nil {
		return b.nextProducerID.Add(1) - 1
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	id := b.nextProducerID.Add(1) - 1
	if id >= b.reservedTo {
		next := id + producerIDBlock
		if err := b.dir.ReserveProducerIDs(next); err != nil {
			// Handing the ID out anyway risks reuse after a restart; a
			// data directory that cannot be written fails produces too.
			b.cfg.Log.Warn("producer IDs not reserved", attrDataDir, b.cfg.Dir, "err", err)
			return id
		}
		b.reservedTo = next
	}
	return id
}

// maxProducerIDSeen returns the highest producer ID any partition knows,
// or -1.
func (b *Binding) maxProducerIDSeen() int64 {
	maxSeen := int64(-1)
	for _, t := range b.st.Store.Topics() {
		for _, p := range t.Partitions() {
			maxSeen = max(maxSeen, p.MaxProducerID())
		}
	}
	return maxSeen
}
