package brokerconfig

// Kafka properties that a KRaft cluster's configuration carries (a
// server.properties, the apache/kafka image's KAFKA_* variables) and that
// mean little or nothing to one in-process broker. They are accepted, so
// a configuration written for Kafka starts here unchanged
// (docs/kafka-env.md, kraft-accepted); where they mean something, they
// are honoured:
//
//   - controller.listener.names: the listeners it names are KRaft
//     controller listeners, which are not opened, and entries for them in
//     advertised.listeners are dropped, as Kafka's
//     KafkaConfig.dataPlaneListeners and effectiveAdvertisedBrokerListeners
//     leave them out of the broker's listeners (controller-listener-skipped).
//   - node.id (and broker.id, its older name): the node ID, unless
//     Settings.NodeID names another (node-id-property).
//   - log.dir: the data directory when log.dirs is not set, as Kafka reads
//     log.dirs first and log.dir second (LogConfig's log.dirs/log.dir).
//
// The rest are recorded in Resolved.Ignored with the reason, for the
// broker to log once each at start (kraft-ignored-logged).

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sharebroker/sharebroker/configdef"
)

// Property names this file honours.
const (
	propControllerListenerNames = "controller.listener.names"
	propNodeID                  = "node.id"
	propBrokerID                = "broker.id"
	propLogDir                  = "log.dir"
)

// IgnoredProperty is a Kafka property accepted at start and not used.
type IgnoredProperty struct {
	Name, Value string
	Why         string
}

// Ignored Kafka properties and why each means nothing here. Values are not
// checked: what would be wrong in them is wrong for a cluster this broker
// does not run.
var ignoredProperties = map[string]string{
	"process.roles":                                    "one process is both broker and controller",
	"controller.quorum.voters":                         "there is no controller quorum",
	"controller.quorum.bootstrap.servers":              "there is no controller quorum",
	propControllerListenerNames:                        "its listeners are not opened",
	"inter.broker.listener.name":                       "there is no traffic between brokers",
	"security.inter.broker.protocol":                   "there is no traffic between brokers",
	"sasl.mechanism.inter.broker.protocol":             "there is no traffic between brokers",
	"sasl.mechanism.controller.protocol":               "there is no controller quorum",
	"metadata.log.dir":                                 "the metadata log lives in the data directory",
	"offsets.topic.replication.factor":                 "internal topics are not topics here; one node holds one replica",
	"offsets.topic.num.partitions":                     "committed offsets are not kept in a topic",
	"transaction.state.log.replication.factor":         "internal topics are not topics here; one node holds one replica",
	"transaction.state.log.min.isr":                    "internal topics are not topics here; one node holds one replica",
	"transaction.state.log.num.partitions":             "transaction state is not kept in a topic",
	"share.coordinator.state.topic.replication.factor": "internal topics are not topics here; one node holds one replica",
	"share.coordinator.state.topic.min.isr":            "internal topics are not topics here; one node holds one replica",
	"share.coordinator.state.topic.num.partitions":     "share state is not kept in a topic",
	"group.coordinator.rebalance.protocols":            "classic, consumer and share groups are always served",
	"group.share.enable":                               "share groups are always served",
	"unstable.api.versions.enable":                     "ApiVersions advertises exactly the versions with a handler",
	"unstable.feature.versions.enable":                 "features are set by their own properties (transaction.version, share.version)",
	"num.network.threads":                              "one goroutine serves each connection",
	"num.io.threads":                                   "one goroutine serves each connection",
	"num.recovery.threads.per.data.dir":                "recovery runs in one pass",
	"num.replica.fetchers":                             "there is no replication",
	"background.threads":                               "no thread pools to size",
	"socket.send.buffer.bytes":                         "the kernel's socket buffers are used as they are",
	"socket.receive.buffer.bytes":                      "the kernel's socket buffers are used as they are",
	"log.retention.hours":                              "only log.retention.ms is read; set it instead",
	"log.retention.minutes":                            "only log.retention.ms is read; set it instead",
	"ssl.endpoint.identification.algorithm":            "it checks the host names of brokers this broker connects to, and it connects to none",
	"auto.leader.rebalance.enable":                     "leaders move only through the test API",
	"controlled.shutdown.enable":                       "shutdown is always controlled",
	"jmx.port":                                         "there is no JMX; metrics are served at /metrics",
}

// takeKRaftProperties removes from props every property this file knows:
// it returns the controller listener names, and records the ignored ones
// in r.Ignored (sorted by name). node.id, broker.id and log.dir are
// applied to r.
func (r *Resolved) takeKRaftProperties(props map[string]string) (controllers map[string]bool, err error) {
	controllers = make(map[string]bool)
	for _, name := range configdef.SplitList(props[propControllerListenerNames]) {
		controllers[strings.ToUpper(name)] = true
	}
	for name, v := range props {
		if why, ok := ignoredProperties[name]; ok {
			r.Ignored = append(r.Ignored, IgnoredProperty{Name: name, Value: v, Why: why})
			delete(props, name)
		}
	}
	slices.SortFunc(r.Ignored, func(a, b IgnoredProperty) int { return strings.Compare(a.Name, b.Name) })
	if err := r.takeNodeID(props); err != nil {
		return nil, err
	}
	if dir, ok := props[propLogDir]; ok {
		delete(props, propLogDir)
		if _, both := props[propLogDirs]; !both && strings.TrimSpace(dir) != "" {
			props[propLogDirs] = dir
		}
	}
	return controllers, nil
}

// takeNodeID applies node.id and broker.id (node-id-property): Kafka
// requires the two to agree when both are set (KafkaConfig: "broker.id and
// node.id must match"), and so does this broker, with Settings.NodeID
// too when it is not 0.
func (r *Resolved) takeNodeID(props map[string]string) error {
	var id int32 = -1
	for _, name := range []string{propNodeID, propBrokerID} {
		v, ok := props[name]
		if !ok {
			continue
		}
		delete(props, name)
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		if err != nil || n < 0 {
			return fmt.Errorf("%s %q: want a node ID from 0 to %d", name, v, int32(^uint32(0)>>1))
		}
		if id >= 0 && int32(n) != id {
			return fmt.Errorf("%s=%d and %s=%d must match", propBrokerID, n, propNodeID, id)
		}
		id = int32(n)
	}
	switch {
	case id < 0:
	case r.NodeID != 0 && r.NodeID != id:
		return fmt.Errorf("node ID set twice: %d, and %s %d", r.NodeID, propNodeID, id)
	default:
		r.NodeID = id
	}
	return nil
}

// dropListeners removes from a listeners or advertised.listeners value
// the entries whose listener name is in names.
func dropListeners(value string, names map[string]bool) string {
	if len(names) == 0 || strings.TrimSpace(value) == "" {
		return value
	}
	var kept []string
	for entry := range strings.SplitSeq(value, ",") {
		name, _, _ := strings.Cut(strings.TrimSpace(entry), "://")
		if !names[strings.ToUpper(strings.TrimSpace(name))] {
			kept = append(kept, entry)
		}
	}
	return strings.Join(kept, ",")
}
