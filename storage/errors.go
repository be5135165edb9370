package storage

import "errors"

// Sentinel errors of the storage package. The broker maps each to a Kafka
// error code in one place; here they are plain Go errors, wrapped with %w and
// a message that says what was wrong.
var (
	ErrUnknownTopic          = errors.New("unknown topic or partition")
	ErrUnknownTopicID        = errors.New("unknown topic ID")
	ErrTopicExists           = errors.New("topic already exists")
	ErrInvalidTopic          = errors.New("invalid topic name")
	ErrInvalidPartitions     = errors.New("invalid number of partitions")
	ErrOffsetOutOfRange      = errors.New("offset out of range")
	ErrCorruptMessage        = errors.New("corrupt record batch")
	ErrInvalidRecord         = errors.New("invalid record batch")
	ErrMessageTooLarge       = errors.New("record batch larger than max.message.bytes")
	ErrOutOfOrderSequence    = errors.New("out of order sequence number")
	ErrInvalidProducerEpoch  = errors.New("producer epoch is older than the current one")
	ErrInvalidTimestamp      = errors.New("invalid timestamp")
	ErrPolicyViolation       = errors.New("request violates the topic's configuration")
	ErrTopicDeletionDisabled = errors.New("topic deletion is disabled")
	// ErrInvalidTxnState: a transactional batch whose transaction ended in
	// this partition after the coordinator checked it (TxnGuard).
	ErrInvalidTxnState = errors.New("transactional batch outside an ongoing transaction")
	// ErrStorage: the data directory refused a write (KAFKA_STORAGE_ERROR);
	// nothing changed.
	ErrStorage = errors.New("data directory write failed")
)
