package broker

import (
	"fmt"
	"net"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/acl"
	"github.com/sharebroker/sharebroker/brokerconfig"
	"github.com/sharebroker/sharebroker/cluster"
)

// standardAuthorizer is the one authorizer.class.name we know: Kafka's
// KRaft authorizer, whose rules the acl package follows.
const standardAuthorizer = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

// newAuthorizer reads authorizer.class.name, super.users and
// allow.everyone.if.no.acl.found. Without a class name it returns nil:
// authorization is off and every request is allowed (rule acl-off).
func newAuthorizer(props brokerconfig.Props) (*acl.Authorizer, error) {
	switch name := props["authorizer.class.name"]; name {
	case "":
		return nil, nil
	case standardAuthorizer:
		return acl.New(acl.Config{
			SuperUsers:   acl.ParseSuperUsers(props["super.users"]),
			AllowIfNoACL: props.Bool("allow.everyone.if.no.acl.found"),
		}), nil
	default:
		return nil, fmt.Errorf("authorizer.class.name: %q is not an authorizer sharebroker has; the one it has is %s", name, standardAuthorizer)
	}
}

// clientIP is the client's IP, as ACL hosts name it; worked out once and
// kept: only the connection's goroutine calls it.
func (c *conn) clientIP() string {
	if c.host == "" {
		if addr, ok := c.nc.RemoteAddr().(*net.TCPAddr); ok {
			c.host = addr.IP.String()
		} else {
			c.host = c.nc.RemoteAddr().String()
		}
	}
	return c.host
}

// clientHost is the client's address as Kafka reports it in group
// descriptions: the IP with a leading slash. ACLs match clientIP instead.
func (c *conn) clientHost() string { return "/" + c.clientIP() }

// authorized reports whether the request's principal may perform op on
// the resource, and counts and logs a denial: the check for a resource the
// client named (Kafka's logIfDenied). With authorization off it is one
// branch, no allocation.
func (r *request) authorized(op acl.Operation, t acl.ResourceType, name string) bool {
	a := r.conn.b.authz
	if a == nil {
		return true
	}
	c := r.conn
	if a.Authorize(c.principal, c.clientIP(), op, t, name) {
		return true
	}
	c.b.metrics.Denied(t, c.nodeLabel())
	c.log.Debug("authorization denied", "principal", c.principal, "host", c.clientIP(),
		"operation", op.String(), "resource_type", t.String(), "resource", name)
	return false
}

// authorizedQuietly is authorized without counting or logging a denial:
// for filtering what a listing shows (Metadata of all topics, ListGroups),
// where a denial only hides something, as Kafka's logIfDenied=false.
func (r *request) authorizedQuietly(op acl.Operation, t acl.ResourceType, name string) bool {
	a := r.conn.b.authz
	return a == nil || a.Authorize(r.conn.principal, r.conn.clientIP(), op, t, name)
}

// authorizedCluster is authorized for the CLUSTER resource.
func (r *request) authorizedCluster(op acl.Operation) bool {
	return r.authorized(op, acl.ResourceCluster, acl.ClusterName)
}

// authorizedOperations is the authorized operations field for a resource:
// every operation its type supports that the principal may perform, as
// Kafka's AuthHelper.authorizedOperations reports; all of them with
// authorization off.
func (r *request) authorizedOperations(t acl.ResourceType, name string) int32 {
	a := r.conn.b.authz
	if a == nil {
		return acl.OperationsBits(acl.SupportedOperations(t))
	}
	return acl.OperationsBits(a.AuthorizedOperations(r.conn.principal, r.conn.clientIP(), t, name))
}

// groupGate is what a request about one group meets before its
// coordinator: GROUP_AUTHORIZATION_FAILED without op on the group (Kafka's
// KafkaApis checks before asking the coordinator), else NOT_COORDINATOR
// when another node coordinates it.
func (b *Broker) groupGate(r *request, op acl.Operation, id string) error {
	if !r.authorized(op, acl.ResourceGroup, id) {
		return errGroupAuthorization
	}
	return b.notCoordinator(r.conn, cluster.Group, id)
}

// configDenied is the refusal of a config resource, as Kafka's
// ConfigHelper (describe) and ControllerApis.authorizeAlterResource
// (alter) decide: op (DESCRIBE_CONFIGS or ALTER_CONFIGS) on CLUSTER for
// BROKER, BROKER_LOGGER and CLIENT_METRICS, on the topic for TOPIC, on the
// group for GROUP. Another type is left to the handler's own checks.
func (r *request) configDenied(op acl.Operation, t kmsg.ConfigResourceType, name string) error {
	switch t {
	case kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeBrokerLogger, kmsg.ConfigResourceTypeClientMetrics:
		if !r.authorizedCluster(op) {
			return errClusterAuthorization
		}
	case kmsg.ConfigResourceTypeTopic:
		if !r.authorized(op, acl.ResourceTopic, name) {
			return errTopicAuthorization
		}
	case kmsg.ConfigResourceTypeGroupConfig:
		if !r.authorized(op, acl.ResourceGroup, name) {
			return errGroupAuthorization
		}
	}
	return nil
}

// describableGroups returns the groups of ids the principal may DESCRIBE,
// in request order, and hands each refused one to refused: the describe
// handlers (ConsumerGroupDescribe, ShareGroupDescribe) answer the refused
// groups first, as KafkaApis does.
func (r *request) describableGroups(ids []string, refused func(id string)) []string {
	var allowed []string
	for _, id := range ids {
		if r.authorized(acl.OpDescribe, acl.ResourceGroup, id) {
			allowed = append(allowed, id)
		} else {
			refused(id)
		}
	}
	return allowed
}
