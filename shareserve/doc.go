// Package shareserve owns the share conversation (KIP-932): one ShareFetch
// is one Service.Fetch, one ShareAcknowledge one Service.Acknowledge. It
// holds the share sessions and the registry of share partitions, and runs
// a request's whole order across storage and sharepartition: the session
// epoch, acknowledgements first, then acquisition over the session
// partitions within the record and byte budgets, parking on the broker
// clock (internal/longpoll) until records arrive or locks free, closing,
// and the outcome counts the broker's metrics add.
//
// It sees no wire types and no sockets: handlers translate kmsg into its
// plain types (FetchRequest, AckRequest) and its results back, and map its
// sentinel errors to Kafka codes. What only the edge knows — which node
// leads a partition, what a principal may read — it asks through one
// interface, Edge.
//
// It composes two domain packages (storage and sharepartition) and reads
// group configs, so it sits between the broker and the domain rather than
// in it (docs/design.md, "The layering rule"). It lives at the top level,
// not inside broker, because more than the Kafka handlers read it (the
// HTTP console's share inspection).
package shareserve
