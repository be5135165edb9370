// Package txn is sharebroker's transaction coordinator: transactional IDs
// mapped to a producer ID and epoch, the state of each ID's transaction,
// the partitions and groups in it, and the transaction timeout on the
// broker clock. The rules are in docs/transactions.md; tests cite them by
// name.
//
// The coordinator does not write to logs or groups itself: ending a
// transaction hands a Completion to the Config.Complete callback, which
// the broker implements by appending markers and settling pending offset
// commits. The callback runs without any coordinator lock held, while the
// ID is in PrepareCommit or PrepareAbort, so every other request for the ID
// answers ErrConcurrentTransactions until it returns.
package txn
