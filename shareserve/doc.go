// Package shareserve serves share groups (KIP-932) for the broker's
// handlers: it holds the share sessions, the registry of share partitions,
// and applies acknowledgements and acquisitions across storage and
// sharepartition. One ShareFetch is one Fetch: acknowledgements first,
// then acquisition over the session partitions in long-poll attempts, then
// the partitions the answer lists.
//
// It sees no wire types and no sockets: handlers translate kmsg into its
// plain types (SessionKey, TopicPartition, sharepartition.AckBatch, Limits)
// and its Answers back, and map its sentinel errors to Kafka codes. The
// long-poll loop stays in the broker, which owns the clock's deadline and
// closing; Fetch.Attempt is shaped for it, registering a wake channel with
// every log and share partition whose change could alter the answer.
//
// It composes two domain packages (storage and sharepartition) and reads
// group configs, so it sits between the broker and the domain rather than
// in it (docs/design.md, "The layering rule"). It lives at the top level,
// not inside broker, because more than the Kafka handlers read it (the
// HTTP console's share inspection).
package shareserve
