package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/broker"
	"github.com/sharebroker/sharebroker/internal/rawconn"
)

// Rule: api-versions-target (docs/log.md; KIP-1242, Kafka 4.4's
// KafkaApis.clusterIdOrNodeIdIsInvalid): an ApiVersions v5 naming this
// cluster and the node the connection reached is answered as usual; one
// naming another cluster or node is REBOOTSTRAP_REQUIRED, and one naming
// only half of the pair INVALID_REQUEST, each with no API keys. Before
// this rule the broker answered all of them with its full list.
func TestAPIVersionsTarget(t *testing.T) {
	b, _ := startNodes(t, 3)
	cluster := broker.DefaultClusterID
	other := "another-cluster"
	tests := []struct {
		name    string
		version int16
		cluster *string
		node    int32
		want    int16
	}{
		{"this cluster and node", 5, &cluster, 6, 0},
		{"bootstrapping: no cluster, node -1", 5, nil, -1, 0},
		{"another node of this cluster", 5, &cluster, 5, kerr.RebootstrapRequired.Code},
		{"another cluster", 5, &other, 6, kerr.RebootstrapRequired.Code},
		{"cluster without node", 5, &cluster, -1, kerr.InvalidRequest.Code},
		{"node without cluster (a struct literal's 0)", 5, nil, 0, kerr.InvalidRequest.Code},
		{"v4 carries neither field", 4, &other, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := rawconn.Dial(t, nodeListenerAddr(t, b, 6, "PLAINTEXT"))
			req := kmsg.NewPtrApiVersionsRequest()
			req.Version = tc.version
			req.ClientSoftwareName, req.ClientSoftwareVersion = "test", "1.0"
			req.ClusterID, req.NodeID = tc.cluster, tc.node
			resp := c.Request(req).(*kmsg.ApiVersionsResponse)
			if resp.ErrorCode != tc.want {
				t.Fatalf("error code %d (%v), want %d", resp.ErrorCode, kerr.ErrorForCode(resp.ErrorCode), tc.want)
			}
			if tc.want != 0 {
				// Kafka's getErrorResponse: the code alone.
				if len(resp.ApiKeys) != 0 || len(resp.SupportedFeatures) != 0 || len(resp.FinalizedFeatures) != 0 {
					t.Fatalf("refusal carries %d keys, %d supported and %d finalized features; want none",
						len(resp.ApiKeys), len(resp.SupportedFeatures), len(resp.FinalizedFeatures))
				}
				c.ExpectOpen() // a refusal is an answer, not a closed connection
				return
			}
			if len(resp.ApiKeys) == 0 {
				t.Fatal("answer lists no API keys")
			}
		})
	}
}

// Rule: api-versions-target: kgo (1.22+) names the cluster and node on
// every connection to a broker it discovered. Over three nodes each of
// those connections must be taken for the right one, or kgo would be sent
// back to its seeds each time and the produce to the partitions every node
// leads would not finish.
func TestAPIVersionsTargetKgoAcrossNodes(t *testing.T) {
	b, _ := startNodes(t, 3)
	createTopicRaw(t, rawconn.Dial(t, nodeListenerAddr(t, b, 5, "PLAINTEXT")), "target", 6)
	cl, err := kgo.NewClient(kgo.SeedBrokers(nodeListenerAddr(t, b, 5, "PLAINTEXT")),
		kgo.DefaultProduceTopic("target"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for p := range int32(6) {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v"), Partition: p}).FirstErr(); err != nil {
			t.Fatalf("produce to partition %d: %v", p, err)
		}
	}
	leaders := map[int32]bool{}
	for _, p := range b.Cluster().Partitions {
		if p.Topic == "target" {
			leaders[p.Leader] = true
		}
	}
	if len(leaders) != 3 {
		t.Fatalf("the partitions are led by %v; the test needs all three nodes", leaders)
	}
}
