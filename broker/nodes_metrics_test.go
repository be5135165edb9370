package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/internal/rawconn"
)

// Metrics of a figure that is per node carry a node label: the requests
// each node answered and how long they took, the frames each refused, its
// open connections (every node listed, a stopped one at 0). Each node
// has a series before it is asked anything.
func TestNodesMetricsByNode(t *testing.T) {
	b, base := startMoveNodes(t, 3)
	addrs := b.NodeAddrs()
	c1 := rawconn.Dial(t, addrs[1].String())
	c2 := rawconn.Dial(t, addrs[2].String())
	for range 3 {
		c1.Request(kmsg.NewPtrMetadataRequest())
	}
	c2.Request(kmsg.NewPtrMetadataRequest())
	bad := rawconn.Dial(t, addrs[2].String())
	bad.Write([]byte{0, 0, 0, 2, 0xff, 0xff}) // a header cut short
	bad.ExpectClosed()

	fams := scrape(t, base)
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"sharebroker_requests_total", map[string]string{"api": "Metadata", "error_code": "0", "node": "0"}, 0},
		{"sharebroker_requests_total", map[string]string{"api": "Metadata", "error_code": "0", "node": "1"}, 3},
		{"sharebroker_requests_total", map[string]string{"api": "Metadata", "error_code": "0", "node": "2"}, 1},
		{"sharebroker_frames_rejected_total", map[string]string{"reason": "malformed_header", "node": "1"}, 0},
		{"sharebroker_frames_rejected_total", map[string]string{"reason": "malformed_header", "node": "2"}, 1},
		{"sharebroker_connections", map[string]string{"node": "0"}, 0},
		{"sharebroker_connections", map[string]string{"node": "1"}, 1},
		{"sharebroker_connections", map[string]string{"node": "2"}, 1},
	} {
		if got := metricValue(t, fams, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	for node, want := range map[string]uint64{"0": 0, "1": 3, "2": 1} {
		h := findMetric(fams, "sharebroker_request_duration_seconds", map[string]string{"api": "Metadata", "node": node})
		if got := h.GetHistogram().GetSampleCount(); got != want {
			t.Errorf("Metadata duration samples on node %s: %d, want %d", node, got, want)
		}
	}

	// A stopped node keeps its series, at no connections; its closed
	// connection leaves it as its goroutine ends.
	if err := b.StopNode(2); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		fams = scrape(t, base)
		if metricValue(t, fams, "sharebroker_connections", map[string]string{"node": "2"}) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("node 2's connection still counted after its stop")
		case <-time.After(10 * time.Millisecond): // polling a condition, bounded by ctx
		}
	}
	if got := metricValue(t, fams, "sharebroker_connections", map[string]string{"node": "1"}); got != 1 {
		t.Errorf("node 1 connections %v after node 2 stopped, want 1", got)
	}
}
