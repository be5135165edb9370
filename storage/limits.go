package storage

// MaxPartitionsPerRequest is how many partitions one request may create,
// summed over its topics (docs/log.md partitions-per-request-limit). It is
// Kafka's ReplicationControlManager.MAX_PARTITIONS_PER_BATCH: the
// controller refuses a larger CreateTopics before placing anything
// (validateTotalNumberOfPartitions, KAFKA-17870), because allocating in
// proportion to an unchecked count is how one request exhausted memory.
const MaxPartitionsPerRequest = 10_000

// ErrTooManyPartitions is the refusal of a request over
// MaxPartitionsPerRequest. It is a POLICY_VIOLATION (errors.Is
// ErrPolicyViolation) whose text is Kafka's message, word for word, since
// clients show it as the reason.
var ErrTooManyPartitions error = policyError("Excessively large number of partitions per request.")

// policyError is a POLICY_VIOLATION whose Error is exactly the message a
// client is given.
type policyError string

func (e policyError) Error() string { return string(e) }
func (e policyError) Unwrap() error { return ErrPolicyViolation }

// RequestedPartitions is how many partitions one CreateTopics topic asks
// for, as Kafka's validateTotalNumberOfPartitions counts it: the number of
// explicit assignments if there are any, else NumPartitions when positive,
// else defaultCount (num.partitions) for -1, and nothing for an invalid
// count, which is refused on its own.
func RequestedPartitions(numPartitions int32, assignments int, defaultCount int32) int64 {
	switch {
	case assignments > 0:
		return int64(assignments)
	case numPartitions > 0:
		return int64(numPartitions)
	case numPartitions == -1:
		return int64(defaultCount)
	}
	return 0
}

// NewPartitions counts the partitions one request would create, across its
// topics, against MaxPartitionsPerRequest. The zero value is ready to use.
// The sum is an int64, so no count of int32s can wrap it around.
type NewPartitions struct{ total int64 }

// Add counts n more partitions (nothing for n <= 0) and answers
// ErrTooManyPartitions once the request's total exceeds the limit.
func (p *NewPartitions) Add(n int64) error {
	if n > 0 {
		p.total += n
	}
	if p.total > MaxPartitionsPerRequest {
		return ErrTooManyPartitions
	}
	return nil
}

// minRecordBytes is the fewest bytes a magic-2 record takes (a varint
// each for its length, timestamp and offset deltas, key and value lengths
// and header count, and its attributes byte). A batch header's record
// count is the sender's word: space for the records is reserved for no
// more than its bytes can hold, so a count of 2^31 in a small batch
// reserves nothing large (a Record is 88 bytes).
const minRecordBytes = 7
