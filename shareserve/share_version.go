package shareserve

// ShareGroupsOff is what Kafka's SharePartitionManager.onShareVersionToggle
// does when share.version falls below 1 (docs/features.md
// features-share-off-unloads): it empties the share-session cache
// (ShareSessionCache.removeAllSessions) and drops every cached share
// partition (removeSharePartitionFromCache, which fences it), so that when
// share groups are on again each partition is loaded afresh from what the
// share coordinator persisted. Here the partition stays in the registry
// and is brought to that persisted form in memory, as a leader move does
// (sharepartition.LeaderMoved, move-frees-acquired): ACQUIRED records
// become AVAILABLE with the delivery count persisted when their attempt
// began, their locks end without firing, and the acknowledged, archived
// and released records and the SPSO stay. A member's next ShareFetch or
// ShareAcknowledge with a session epoch other than 0 then finds no session
// (SHARE_SESSION_NOT_FOUND), and a new session is served the records its
// member held as any others. Nothing is released on the members' behalf, as
// Kafka releases nothing: its sessions are dropped, not closed. It returns
// the sessions dropped and the records freed.
func (s *Service) ShareGroupsOff() (sessions int, freed int64) {
	sessions = s.Sessions.dropAll()
	now := s.clock.Now()
	for _, kp := range s.All() {
		kp.Part.moving.Lock()
		freed += kp.Part.Share.LeaderMoved(now)
		kp.Part.moving.Unlock()
		kp.Part.waiters.Notify()
	}
	return sessions, freed
}

// dropAll removes every session without releasing anything and returns how
// many there were; a fetch parked on one of them is woken.
func (s *Sessions) dropAll() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.byKey)
	for key, sess := range s.byKey {
		s.removeLocked(key)
		sess.ready.close()
	}
	return n
}
