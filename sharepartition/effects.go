package sharepartition

// unlockAndEmit ends a change made under sp.mu. It queues the persisted
// state while the lock is still held, so the queue keeps the order of the
// changes (share-state-as-kafka), releases the lock, then emits what the
// change caused outside the partition, in order: the state written to the
// data directory, the dead letters it queued handed to their writer, and,
// when wake is set (records became acquirable), the parked fetches woken.
// Every change ends here, so what one acknowledgement causes reads in one
// place, and no file is written under sp.mu.
func (sp *SharePartition) unlockAndEmit(wake bool) {
	sp.persistLocked()
	write := len(sp.unwritten) > 0
	notify := sp.cfg.OnChange
	dead, hook := sp.takeDeadLocked()
	sp.mu.Unlock()
	if write {
		sp.writePersisted()
	}
	reportDead(dead, hook)
	if wake && notify != nil {
		notify()
	}
}
