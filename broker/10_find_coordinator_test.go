package broker_test

import (
	"net"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/broker"
)

func TestFindCoordinator(t *testing.T) {
	_, addr := startBroker(t, broker.Config{NodeID: 7})
	host, port := splitAddr(t, addr)
	type want struct {
		code int16
		us   bool // answered with this node
	}
	cases := []struct {
		name    string
		version int16
		keyType int8
		key     string
		want    want
	}{
		{"group key v0", 0, 0, "g", want{0, true}},
		{"group key v3", 3, 0, "g", want{0, true}},
		{"transactional id v3", 3, 1, "txn", want{0, true}},
		{"group key v6", 6, 0, "share-group", want{0, true}},
		{"empty key", 4, 0, "", want{kerr.InvalidRequest.Code, false}},
		{"share key needs v6", 5, 2, "g:AAAAAAAAAAAAAAAAAAAAAA:0", want{kerr.InvalidRequest.Code, false}},
		{"share key v6", 6, 2, "g:AAAAAAAAAAAAAAAAAAAAAA:0", want{0, true}},
		{"share key with colons in the group", 6, 2, "a:b:AAAAAAAAAAAAAAAAAAAAAA:3", want{0, true}},
		{"malformed share key", 6, 2, "g:0", want{kerr.InvalidRequest.Code, false}},
		{"share key with a bad partition", 6, 2, "g:AAAAAAAAAAAAAAAAAAAAAA:x", want{kerr.InvalidRequest.Code, false}},
		{"unknown key type", 6, 9, "g", want{kerr.InvalidRequest.Code, false}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := dialRaw(t, addr)
			req := kmsg.NewPtrFindCoordinatorRequest()
			req.Version = tc.version
			req.CoordinatorType = tc.keyType
			req.CoordinatorKey = tc.key
			req.CoordinatorKeys = []string{tc.key}
			resp := c.request(req).(*kmsg.FindCoordinatorResponse)
			code, node, h, p := resp.ErrorCode, resp.NodeID, resp.Host, resp.Port
			if tc.version >= 4 {
				if len(resp.Coordinators) != 1 || resp.Coordinators[0].Key != tc.key {
					t.Fatalf("want one coordinator for %q, got %+v", tc.key, resp.Coordinators)
				}
				co := resp.Coordinators[0]
				code, node, h, p = co.ErrorCode, co.NodeID, co.Host, co.Port
			}
			if code != tc.want.code {
				t.Fatalf("error code %d, want %d", code, tc.want.code)
			}
			if tc.want.us && (node != 7 || h != host || p != port) {
				t.Fatalf("coordinator %d at %s:%d, want node 7 at %s:%d", node, h, p, host, port)
			}
			if !tc.want.us && node != -1 {
				t.Fatalf("failed lookup names node %d", node)
			}
		})
	}
}

func splitAddr(t *testing.T, addr string) (string, int32) {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	return host, int32(n)
}
