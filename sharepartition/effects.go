package sharepartition

// unlockAndEmit ends a change made under sp.mu. It writes the persisted
// state while the lock is still held (share-state-as-kafka: the data
// directory sees changes in the order they were made), releases the lock,
// then emits what the change caused outside the partition, in order: the
// dead letters it queued, to their writer, and, when wake is set (records
// became acquirable), the parked fetches. Every change but ResetStart's
// ends here, so what one acknowledgement causes reads in one place.
func (sp *SharePartition) unlockAndEmit(wake bool) {
	sp.persistLocked()
	notify := sp.cfg.OnChange
	dead, hook := sp.takeDeadLocked()
	sp.mu.Unlock()
	reportDead(dead, hook)
	if wake && notify != nil {
		notify()
	}
}
