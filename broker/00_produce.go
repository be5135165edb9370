package broker

// Produce (key 0), v3-v13: every version whose records are magic-2 batches.
//
//   - Each partition's Records must be exactly one magic-2 batch with a
//     correct CRC (else CORRUPT_MESSAGE or INVALID_RECORD) no larger than the
//     topic's max.message.bytes (else MESSAGE_TOO_LARGE). It is stored as
//     sent, compression included, with its base offset rewritten.
//   - Topics are named up to v12 and identified by topic ID from v13; an
//     unknown one answers UNKNOWN_TOPIC_OR_PARTITION or UNKNOWN_TOPIC_ID.
//     Produce never creates topics (Kafka creates them from Metadata only).
//   - acks must be 0, 1 or -1 (else INVALID_REQUIRED_ACKS); acks=0 gets no
//     response at all. With one node, 1 and -1 mean the same; with more,
//     -1 is refused with NOT_ENOUGH_REPLICAS while fewer nodes are up than
//     the topic's min.insync.replicas (min-isr).
//   - An acks=0 request that fails for any partition closes the connection,
//     as Kafka does: there is no response to carry the error, and a closed
//     connection is what makes the producer refresh its metadata.
//   - Idempotent producers (producer ID >= 0) get Kafka's sequence checks: a
//     retried batch is answered with its original offset and stored once, a
//     gap is OUT_OF_ORDER_SEQUENCE_NUMBER, an old epoch INVALID_PRODUCER_EPOCH.
//   - A transactional batch must come from a transactional ID's current
//     producer and epoch, to a partition added to its ongoing transaction
//     (add-partitions): else INVALID_TXN_STATE, or INVALID_PRODUCER_EPOCH
//     for an old epoch, as Kafka's partition leader answers (fenced). If
//     the transaction's marker reaches the partition between that check
//     and the append, the batch is refused the same way (marker-last).
//   - LogAppendTime topics stamp the batch with the broker clock and return
//     that time; CreateTime topics return -1.
//   - Authorization (docs/security.md, api-authorization): a request with
//     transactional batches needs WRITE on its transactional ID, else every
//     partition answers TRANSACTIONAL_ID_AUTHORIZATION_FAILED with Kafka's
//     message; each topic needs WRITE, else its partitions answer
//     TOPIC_AUTHORIZATION_FAILED (before any other check but an unknown
//     topic ID). Idempotent batches need nothing more: Kafka 4 dropped
//     the IDEMPOTENT_WRITE check from Produce.
//   - ErrorMessage is null, error or not, except for NOT_ENOUGH_REPLICAS
//     from a transaction being completed, as in Kafka (answers-as-kafka):
//     its ReplicaManager fills the message only for per-record validation
//     errors and for the "unable to verify" translation.

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/acl"
	"github.com/sharebroker/sharebroker/storage"
	"github.com/sharebroker/sharebroker/txn"
)

func init() { register(0, 3, 13, handleProduce) }

func handleProduce(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	validAcks := req.Acks == 0 || req.Acks == 1 || req.Acks == -1
	nowMs := b.clock.Now().UnixMilli()
	leaders := leaderEndpoints{b: b, index: r.conn.listenerIndex()}
	if b.authz != nil && !r.produceTxnAuthorized(req) {
		return produceRefused(req, errTransactionalIDAuthorization)
	}

	for _, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		var t *storage.Topic
		missing := kerr.UnknownTopicOrPartition.Code
		if req.Version >= 13 {
			t = b.store.TopicByID(rt.TopicID)
			missing = kerr.UnknownTopicID.Code
		} else {
			t = b.store.Topic(rt.Topic)
		}
		var settings topicSettings
		if t != nil {
			settings = b.topicConfig(t)
		}
		// WRITE on the topic, by the name the request gives (v13: the
		// name its ID resolves to; an unknown ID has none to check).
		denied := false
		if b.authz != nil && (t != nil || req.Version < 13) {
			name := rt.Topic
			if t != nil {
				name = t.Name
			}
			denied = !r.authorized(acl.OpWrite, acl.ResourceTopic, name)
		}
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = -1, -1, -1
			var p *storage.Partition
			if t != nil {
				p = t.Partition(rp.Partition)
			}
			switch {
			case denied:
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case !validAcks:
				sp.ErrorCode = kerr.InvalidRequiredAcks.Code
			case t == nil:
				sp.ErrorCode = missing
			case p == nil:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case b.notLeaderForProduce(r, t, p, &sp, &leaders):
			default:
				guard, err := b.checkTxnProduce(p, rp.Records, req.Version)
				if err != nil {
					sp.ErrorCode, sp.ErrorMessage = codeFor(err), produceErrMessage(err)
					break
				}
				if err := b.checkMinInsync(req.Acks, p, settings); err != nil {
					sp.ErrorCode = codeFor(err)
					break
				}
				res, err := p.Append(rp.Records, storage.AppendOptions{
					MaxMessageBytes: settings.MaxMessageBytes,
					LogAppendTime:   settings.LogAppendTime,
					NowMs:           nowMs,
					TxnGuard:        guard,
				})
				if err != nil {
					sp.ErrorCode, sp.ErrorMessage = codeFor(err), produceErrMessage(err)
					r.conn.log.Info("produce rejected", attrTopic, p.Topic, attrPartition, p.Index,
						attrErrorCode, sp.ErrorCode, "err", err)
					break
				}
				sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = res.BaseOffset, res.LogAppendTime, res.LogStart
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if req.Acks == 0 {
		for _, st := range resp.Topics {
			for _, sp := range st.Partitions {
				if sp.ErrorCode != 0 {
					return nil, fmt.Errorf("acks=0 produce to %s/%d failed: %w", st.Topic, sp.Partition, kerr.ErrorForCode(sp.ErrorCode))
				}
			}
		}
		return nil, nil
	}
	if req.Version >= 10 {
		leaders.each(func(node int32, ep endpoint) {
			ne := kmsg.NewProduceResponseBroker()
			ne.NodeID, ne.Host, ne.Port = node, ep.host, ep.port
			resp.Brokers = append(resp.Brokers, ne)
		})
	}
	return resp, nil
}

// produceTxnAuthorized checks WRITE on the transactional ID of a request
// carrying transactional batches, as KafkaApis.handleProduceRequest does
// before anything else (RequestUtils.hasTransactionalRecords looks at the
// first batch of each partition); a request without a transactional ID
// fails it.
func (r *request) produceTxnAuthorized(req *kmsg.ProduceRequest) bool {
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			if _, _, ok := storage.PeekTransactional(rp.Records); ok {
				return req.TransactionID != nil && r.authorized(acl.OpWrite, acl.ResourceTransactionalID, *req.TransactionID)
			}
		}
	}
	return true
}

// produceRefused answers every partition of req with err, as Kafka's
// ProduceRequest.getErrorResponse does: offsets -1, the error's message.
// With acks=0 there is no response to carry it: the connection closes.
func produceRefused(req *kmsg.ProduceRequest, err error) (kmsg.Response, error) {
	if req.Acks == 0 {
		return nil, fmt.Errorf("acks=0 produce refused: %w", err)
	}
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = -1, -1, -1
			sp.ErrorCode, sp.ErrorMessage = codeFor(err), errMessage(err)
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// notLeaderForProduce answers a partition this node does not lead with
// NOT_LEADER_OR_FOLLOWER and, from v10 (KIP-951), the current leader and
// its endpoint, as Kafka's KafkaApis.handleProduceRequest does. It reports
// whether it answered.
func (b *Broker) notLeaderForProduce(r *request, t *storage.Topic, p *storage.Partition, sp *kmsg.ProduceResponseTopicPartition, leaders *leaderEndpoints) bool {
	l, code := b.checkLeader(r.conn.node(), t, p.Index, noEpoch)
	if code == 0 {
		return false
	}
	sp.ErrorCode = code
	if r.body.GetVersion() >= 10 {
		sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = l.Leader, l.Epoch
		leaders.add(l.Leader)
	}
	return true
}

// checkMinInsync refuses an acks=-1 append to a partition whose in-sync
// replicas (the nodes that are up) are fewer than its min.insync.replicas,
// capped at its replica count as Kafka's Partition.effectiveMinIsr caps
// it; appendRecordsToLeader checks this before appending (docs/cluster.md
// min-isr). Every node holds a replica, so one node never refuses.
func (b *Broker) checkMinInsync(acks int16, p *storage.Partition, settings topicSettings) error {
	if acks != -1 || b.cfg.Nodes <= 1 {
		return nil
	}
	isr := len(b.cluster.LiveNodes())
	if minIsr := min(int(settings.MinInsync), b.cfg.Nodes); isr < minIsr {
		return fmt.Errorf("%w: partition %d of topic %s has %d in-sync replicas, min.insync.replicas is %d", errNotEnoughReplicas, p.Index, p.Topic, isr, minIsr)
	}
	return nil
}

// produceErrMessage is a partition's ErrorMessage for err. Kafka's
// ReplicaManager writes one only when the error carries a custom message
// (LogAppendResult.hasCustomErrorMessage): per-record validation errors,
// which we never raise, and NOT_ENOUGH_REPLICAS for a transactional batch
// it could not verify. Every other error, and success, is null.
func produceErrMessage(err error) *string {
	if errors.Is(err, errTxnNotVerified) {
		return errMessage(err)
	}
	return nil
}

// checkTxnProduce checks a transactional batch with the coordinator and
// returns the guard its append must pass (marker-last); other batches get
// the zero guard. The guard is taken before the check, so a marker that
// lands after it, while no lock is held, makes the append refuse the
// batch. Under transaction version 2, Produce v12+ adds the partition to
// the transaction itself (produce-implicit-add).
//
// Errors are answered as Kafka's partition leader answers them
// (produce-txn-errors): a fenced epoch INVALID_PRODUCER_EPOCH, which
// clients treat as fenced; a transaction completing NOT_ENOUGH_REPLICAS,
// which every client retries without refreshing metadata; a partition
// not in the transaction TRANSACTION_ABORTABLE from v11 (KIP-890's error
// for it), INVALID_TXN_STATE before.
func (b *Broker) checkTxnProduce(p *storage.Partition, raw []byte, version int16) (storage.TxnGuard, error) {
	pid, epoch, ok := storage.PeekTransactional(raw)
	if !ok {
		return storage.TxnGuard{}, nil
	}
	guard := p.TxnGuard(pid)
	add := version >= 12 && b.txnVersion2()
	err := b.txns.CheckProduce(pid, epoch, txn.TopicPartition{Topic: p.Topic, Partition: p.Index}, add)
	switch {
	case errors.Is(err, txn.ErrProducerFenced):
		return guard, fmt.Errorf("%w: %w", storage.ErrInvalidProducerEpoch, err)
	case errors.Is(err, txn.ErrConcurrentTransactions):
		return guard, fmt.Errorf("%w: %w", errTxnNotVerified, err)
	case errors.Is(err, txn.ErrInvalidTxnState) && version >= 11:
		return guard, fmt.Errorf("%w: %w", errTransactionAbortable, err)
	}
	if err == nil && b.txnProduceHook != nil {
		b.txnProduceHook()
	}
	return guard, err
}
