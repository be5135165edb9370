package broker_test

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/broker"
	"github.com/sharebroker/sharebroker/internal/rawconn"
)

// TestCreateTopicsLargeAnswerStreamed (wire: create-topics-answer-streamed):
// a CreateTopics answer far over the 64 KiB the broker writes at a time
// reaches the client whole and framed at v5 and v7 (a raw connection, so
// each version is the one asked): 300 topics, every one with its ID (v7)
// and the same 40-odd default configs as a topic created alone, among
// them one with an override answering it and a name given twice
// answering INVALID_REQUEST once, where the request put them.
func TestCreateTopicsLargeAnswerStreamed(t *testing.T) {
	_, addr := startBroker(t, broker.Config{})
	for _, version := range []int16{5, 7} {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			conn := rawconn.Dial(t, addr)
			create := func(names ...string) *kmsg.CreateTopicsResponse {
				t.Helper()
				req := kmsg.NewPtrCreateTopicsRequest()
				req.Version = version
				for _, name := range names {
					rt := kmsg.NewCreateTopicsRequestTopic()
					rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 1, -1
					if name == fmt.Sprintf("v%d-tuned", version) {
						c := kmsg.NewCreateTopicsRequestTopicConfig()
						c.Name, c.Value = "retention.ms", ptr("60000")
						rt.Configs = append(rt.Configs, c)
					}
					req.Topics = append(req.Topics, rt)
				}
				return conn.Request(req).(*kmsg.CreateTopicsResponse)
			}
			alone := create(fmt.Sprintf("v%d-alone", version)).Topics[0]
			if alone.ErrorCode != 0 || len(alone.Configs) < 20 {
				t.Fatalf("a topic alone: error %d, %d configs", alone.ErrorCode, len(alone.Configs))
			}
			var names []string
			for i := range 300 {
				names = append(names, fmt.Sprintf("v%d-many-%03d", version, i))
				switch i {
				case 100:
					names = append(names, fmt.Sprintf("v%d-tuned", version))
				case 200:
					names = append(names, fmt.Sprintf("v%d-twice", version), fmt.Sprintf("v%d-twice", version))
				}
			}
			resp := create(names...)
			if n := len(resp.AppendTo(nil)); n < 3*64<<10 {
				t.Fatalf("the answer is %d bytes: not several pieces of 64 KiB, so the test tests nothing", n)
			}
			if len(resp.Topics) != len(names)-1 {
				t.Fatalf("%d topics answered, want %d", len(resp.Topics), len(names)-1)
			}
			for i, got := range resp.Topics {
				want := names[i]
				if i > 202 {
					want = names[i+1] // past the second "twice"
				}
				if got.Topic != want {
					t.Fatalf("answer %d is %q, want %q", i, got.Topic, want)
				}
				switch want {
				case fmt.Sprintf("v%d-twice", version):
					if err := kerr.ErrorForCode(got.ErrorCode); err != kerr.InvalidRequest {
						t.Fatalf("%s: %v, want INVALID_REQUEST", want, err)
					}
					continue
				case fmt.Sprintf("v%d-tuned", version):
					if !hasConfig(got.Configs, "retention.ms", "60000") {
						t.Fatalf("%s: its override retention.ms=60000 is not in the answer", want)
					}
					continue
				}
				if got.ErrorCode != 0 || got.NumPartitions != 1 || (version >= 7) != (got.TopicID != [16]byte{}) {
					t.Fatalf("%s: error %d, %d partitions, ID %x", want, got.ErrorCode, got.NumPartitions, got.TopicID)
				}
				if len(got.Configs) != len(alone.Configs) {
					t.Fatalf("%s: %d configs, a topic alone %d", want, len(got.Configs), len(alone.Configs))
				}
				for j, c := range got.Configs {
					a := alone.Configs[j]
					if c.Name != a.Name || deref(c.Value) != deref(a.Value) || c.Source != a.Source || c.ReadOnly != a.ReadOnly || c.IsSensitive != a.IsSensitive {
						t.Fatalf("%s: config %d is %s=%s, a topic alone's %s=%s", want, j, c.Name, deref(c.Value), a.Name, deref(a.Value))
					}
				}
			}
		})
	}
}

func hasConfig(configs []kmsg.CreateTopicsResponseTopicConfig, name, value string) bool {
	for _, c := range configs {
		if c.Name == name && deref(c.Value) == value {
			return true
		}
	}
	return false
}
