package txn

import "errors"

// Sentinel errors of the transaction coordinator. The broker maps each to a
// Kafka error code in one place (broker/errors.go codeFor).
var (
	// ErrInvalidTimeout: TransactionTimeoutMs is not positive or above
	// transaction.max.timeout.ms (init-timeout).
	ErrInvalidTimeout = errors.New("invalid transaction timeout")
	// ErrConcurrentTransactions: the ID's transaction is completing
	// (init-concurrent, end-txn); retry.
	ErrConcurrentTransactions = errors.New("concurrent transactions")
	// ErrProducerFenced: the epoch is older than the ID's current one
	// (fenced).
	ErrProducerFenced = errors.New("producer fenced")
	// ErrInvalidProducerIDMapping: the producer ID is not the
	// transactional ID's, or the ID is unknown (fenced).
	ErrInvalidProducerIDMapping = errors.New("invalid producer id mapping")
	// ErrInvalidTxnState: the request does not fit the transaction's
	// state (add-partitions, txn-offset-commit, end-txn).
	ErrInvalidTxnState = errors.New("invalid transaction state")
	// ErrTransactionalIDNotFound: DescribeTransactions of an unknown ID
	// (describe-transactions).
	ErrTransactionalIDNotFound = errors.New("transactional id not found")
	// ErrCoordinatorClosed: the coordinator is shutting down.
	ErrCoordinatorClosed = errors.New("transaction coordinator closed")
)
