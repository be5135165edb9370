package httpapi

import "net/http"

// ClusterJSON is GET /v1/cluster: the nodes, every partition's leader and
// every known group's and transactional ID's coordinator.
type ClusterJSON struct {
	Nodes        []NodeJSON        `json:"nodes"`
	Partitions   []LeadershipJSON  `json:"partitions"`
	Coordinators []CoordinatorJSON `json:"coordinators"`
}

// NodeJSON is one node: its ID, the advertised host:port of its first
// listener, and whether it is up.
type NodeJSON struct {
	ID   int32  `json:"id"`
	Addr string `json:"addr"`
	Up   bool   `json:"up"`
}

// LeadershipJSON is one partition's leader and leader epoch.
type LeadershipJSON struct {
	Topic       string `json:"topic"`
	Partition   int32  `json:"partition"`
	Leader      int32  `json:"leader"`
	LeaderEpoch int32  `json:"leader_epoch"`
}

// CoordinatorJSON is the node coordinating one group (type "group") or
// transactional ID (type "transaction").
type CoordinatorJSON struct {
	Key  string `json:"key"`
	Type string `json:"type"`
	Node int32  `json:"node"`
}

func serveCluster(s State) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, s.Cluster())
	}
}
