package broker

// FindCoordinator (key 10), v0-v6.
//
//   - Each key is answered with the node that coordinates it
//     (docs/cluster.md coordinator-by-key): a group (key type 0,
//     share groups included) or a transactional ID (type 1) by its slot,
//     a share partition's state (type 2) by the slot of the whole key, as
//     Kafka's share coordinator hashes it. The node is given at the
//     advertised address of its listener of the same name as the one the
//     client connected to. With one node, that node coordinates
//     everything.
//   - An empty key answers INVALID_REQUEST, as Kafka does for a group or
//     transactional ID it cannot hash.
//   - Key type 2 (SHARE) exists from v6 and takes "groupId:topicId:partition";
//     before v6, or malformed, it answers INVALID_REQUEST. Any other type
//     answers INVALID_REQUEST.
//   - v0-v3 carry one key and answer one coordinator; v4+ carry many
//     (CoordinatorKeys) and answer one entry per key.
//   - ErrorMessage as Kafka's KafkaApis writes it (answers-as-kafka): v1-v3
//     "NONE" on success (Errors.NONE.message()) and a message on error;
//     v4+ the empty string for every key, error or not, because Kafka's
//     batched path never sets it and the field's default is "".
//   - Authorization (docs/security.md api-authorization): DESCRIBE on the
//     group or transactional ID a key names (else GROUP_ or
//     TRANSACTIONAL_ID_AUTHORIZATION_FAILED), CLUSTER_ACTION for share keys
//     (else CLUSTER_AUTHORIZATION_FAILED for every key).

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/acl"
	"github.com/sharebroker/sharebroker/cluster"
)

// Coordinator key types.
const (
	coordinatorGroup       = 0
	coordinatorTransaction = 1
	coordinatorShare       = 2
)

func init() { register(10, 0, 6, handleFindCoordinator) }

func handleFindCoordinator(b *Broker, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	l := r.conn.l
	if req.Version < 4 {
		err := r.coordinatorDenied(req.CoordinatorType, req.CoordinatorKey)
		if err == nil {
			err = validateCoordinatorKey(req.Version, req.CoordinatorType, req.CoordinatorKey)
		}
		resp.ErrorCode, resp.ErrorMessage = codeFor(err), errMessage(err)
		if err == nil {
			resp.ErrorMessage = kmsg.StringPtr("NONE")
		}
		e := b.coordinatorEndpoint(req.CoordinatorType, req.CoordinatorKey, l)
		resp.NodeID, resp.Host, resp.Port = e.node, e.host, e.port
		if err != nil {
			resp.NodeID, resp.Host, resp.Port = -1, "", -1
		}
		return resp, nil
	}
	// A share-state key is the brokers' own business: CLUSTER_ACTION, or
	// the whole request answers CLUSTER_AUTHORIZATION_FAILED.
	shareDenied := req.CoordinatorType == coordinatorShare && req.Version >= 6 && len(req.CoordinatorKeys) > 0 &&
		!r.authorizedCluster(acl.OpClusterAction)
	for _, key := range req.CoordinatorKeys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key = key
		err := r.coordinatorDenied(req.CoordinatorType, key)
		if shareDenied {
			err = errClusterAuthorization
		}
		if err == nil {
			err = validateCoordinatorKey(req.Version, req.CoordinatorType, key)
		}
		c.ErrorCode, c.ErrorMessage = codeFor(err), kmsg.StringPtr("")
		e := b.coordinatorEndpoint(req.CoordinatorType, key, l)
		c.NodeID, c.Host, c.Port = e.node, e.host, e.port
		if err != nil {
			c.NodeID, c.Host, c.Port = -1, "", -1
		}
		resp.Coordinators = append(resp.Coordinators, c)
	}
	return resp, nil
}

type nodeEndpoint struct {
	node int32
	endpoint
}

// coordinatorEndpoint is the coordinator of key at its listener of the
// same name as l.
func (b *Broker) coordinatorEndpoint(keyType int8, key string, l *listener) nodeEndpoint {
	typ := cluster.Group
	if keyType == coordinatorTransaction {
		typ = cluster.Transaction
	}
	node := b.cluster.Coordinator(typ, key)
	return nodeEndpoint{node, b.nodeEndpoint(node, l.index)}
}

// coordinatorDenied is the refusal of one key, as KafkaApis.getCoordinator
// checks before anything else: DESCRIBE on the group for a group key, on
// the transactional ID for a transaction key. Share keys are checked once
// per request (CLUSTER_ACTION, v6+ only: before, the key type is invalid).
func (r *request) coordinatorDenied(keyType int8, key string) error {
	switch keyType {
	case coordinatorGroup:
		if !r.authorized(acl.OpDescribe, acl.ResourceGroup, key) {
			return errGroupAuthorization
		}
	case coordinatorTransaction:
		if !r.authorized(acl.OpDescribe, acl.ResourceTransactionalID, key) {
			return errTransactionalIDAuthorization
		}
	}
	return nil
}

func validateCoordinatorKey(version int16, keyType int8, key string) error {
	switch keyType {
	case coordinatorGroup, coordinatorTransaction:
		if key == "" {
			return fmt.Errorf("%w: empty coordinator key", errInvalidRequest)
		}
		return nil
	case coordinatorShare:
		if version < 6 {
			return fmt.Errorf("%w: key type 2 (share) needs FindCoordinator v6+", errInvalidRequest)
		}
		// groupId:topicId:partition; the group ID itself may hold colons,
		// so the last two fields are split from the right.
		rest, partition, ok1 := cutLast(key, ":")
		group, topicID, ok2 := cutLast(rest, ":")
		if _, err := strconv.ParseInt(partition, 10, 32); !ok1 || !ok2 || group == "" || topicID == "" || err != nil {
			return fmt.Errorf("%w: share coordinator key %q is not groupId:topicId:partition", errInvalidRequest, key)
		}
		return nil
	}
	return fmt.Errorf("%w: unknown coordinator key type %d", errInvalidRequest, keyType)
}

func cutLast(s, sep string) (before, after string, found bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}
