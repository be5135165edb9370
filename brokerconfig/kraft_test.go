package brokerconfig

import (
	"strings"
	"testing"
)

// Rules: kraft-accepted, controller-listener-skipped. The settings of
// Kafka's single-node docker example (docker/examples/.../plaintext)
// resolve: the CONTROLLER listener is left out, the two client listeners
// keep their protocols and advertised addresses, node.id is the node ID,
// log.dirs the data directory, and the KRaft-only properties are recorded
// as ignored, sorted, with a reason each.
func TestResolveKRaftSettings(t *testing.T) {
	r, err := Resolve(Settings{Props: map[string]string{
		"node.id":                                          "1",
		"listener.security.protocol.map":                   "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,PLAINTEXT_HOST:PLAINTEXT",
		"advertised.listeners":                             "PLAINTEXT_HOST://localhost:9092,PLAINTEXT://broker:19092",
		"process.roles":                                    "broker,controller",
		"controller.quorum.voters":                         "1@broker:29093",
		"listeners":                                        "CONTROLLER://:29093,PLAINTEXT_HOST://:9092,PLAINTEXT://:19092",
		"inter.broker.listener.name":                       "PLAINTEXT",
		"controller.listener.names":                        "CONTROLLER",
		"offsets.topic.replication.factor":                 "1",
		"group.initial.rebalance.delay.ms":                 "0",
		"transaction.state.log.min.isr":                    "1",
		"transaction.state.log.replication.factor":         "1",
		"share.coordinator.state.topic.replication.factor": "1",
		"share.coordinator.state.topic.min.isr":            "1",
		"log.dirs":                                         "/tmp/kraft-combined-logs",
	}}, acceptClientAuth)
	if err != nil {
		t.Fatal(err)
	}
	want := []Listener{
		{Name: "PLAINTEXT_HOST", Listen: ":9092", Advertise: "localhost:9092"},
		{Name: "PLAINTEXT", Listen: ":19092", Advertise: "broker:19092"},
	}
	if len(r.Listeners) != len(want) || r.Listeners[0] != want[0] || r.Listeners[1] != want[1] {
		t.Errorf("listeners %+v, want %+v", r.Listeners, want)
	}
	if r.NodeID != 1 || r.DataDir != "/tmp/kraft-combined-logs" {
		t.Errorf("node ID %d, data dir %q", r.NodeID, r.DataDir)
	}
	var names []string
	for _, p := range r.Ignored {
		if p.Why == "" {
			t.Errorf("%s: no reason", p.Name)
		}
		names = append(names, p.Name)
	}
	if got := strings.Join(names, ","); got != "controller.listener.names,controller.quorum.voters,inter.broker.listener.name,offsets.topic.replication.factor,process.roles,share.coordinator.state.topic.min.isr,share.coordinator.state.topic.replication.factor,transaction.state.log.min.isr,transaction.state.log.replication.factor" {
		t.Errorf("ignored: %s", got)
	}
	if r.Values.Int64("group.initial.rebalance.delay.ms") != 0 {
		t.Errorf("group.initial.rebalance.delay.ms is a property of the table and is kept")
	}
}

// Rules: controller-listener-skipped (an advertised entry for a controller
// listener is dropped, as Kafka's effectiveAdvertisedBrokerListeners
// does), node-id-property, log.dir.
func TestResolveKRaftEdges(t *testing.T) {
	r, err := Resolve(Settings{Props: map[string]string{
		"listeners":                 "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"advertised.listeners":      "PLAINTEXT://a:1,CONTROLLER://b:2",
		"controller.listener.names": "controller",
		"broker.id":                 "7",
		"log.dir":                   "/x",
	}}, acceptClientAuth)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Listeners) != 1 || r.Listeners[0].Advertise != "a:1" || r.NodeID != 7 || r.DataDir != "/x" {
		t.Errorf("listeners %+v, node %d, dir %q", r.Listeners, r.NodeID, r.DataDir)
	}
	// log.dirs wins over log.dir.
	r, err = Resolve(Settings{Props: map[string]string{"log.dirs": "/a", "log.dir": "/b"}}, acceptClientAuth)
	if err != nil || r.DataDir != "/a" {
		t.Errorf("log.dirs and log.dir: %q, %v", r.DataDir, err)
	}
	for _, tt := range []struct {
		name string
		s    Settings
		want string
	}{
		{"only controller listeners", Settings{Props: map[string]string{"listeners": "CONTROLLER://:9093", "controller.listener.names": "CONTROLLER"}}, "every listener is a controller listener"},
		{"node.id not a number", Settings{Props: map[string]string{"node.id": "one"}}, `node.id "one"`},
		{"node.id negative", Settings{Props: map[string]string{"node.id": "-1"}}, `node.id "-1"`},
		{"node.id and broker.id differ", Settings{Props: map[string]string{"node.id": "1", "broker.id": "2"}}, "must match"},
		{"node ID twice", Settings{NodeID: 3, Props: map[string]string{"node.id": "1"}}, "node ID set twice"},
		{"unknown still unknown", Settings{Props: map[string]string{"process.roles": "broker", "no.such": "1"}}, `unknown broker property "no.such"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Resolve(tt.s, acceptClientAuth)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}
