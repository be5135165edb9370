package broker

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/metrics"
	"github.com/sharebroker/sharebroker/wire"
)

// benchShareFetch is a ShareFetch answer of 10 topics of 100 partitions,
// each with two acquired-record ranges, one partition answering
// NOT_LEADER_OR_FOLLOWER: the size where reading error codes per request
// would show.
func benchShareFetch() *wire.ShareFetchResponse {
	r := &wire.ShareFetchResponse{ShareFetchResponse: *kmsg.NewPtrShareFetchResponse()}
	for ti := range 10 {
		t := kmsg.NewShareFetchResponseTopic()
		t.TopicID[0] = byte(ti)
		for pi := range int32(100) {
			p := kmsg.NewShareFetchResponseTopicPartition()
			p.Partition = pi
			for i := range int64(2) {
				ar := kmsg.NewShareFetchResponseTopicPartitionAcquiredRecord()
				ar.FirstOffset, ar.LastOffset, ar.DeliveryCount = i*10, i*10+9, 1
				p.AcquiredRecords = append(p.AcquiredRecords, ar)
			}
			t.Partitions = append(t.Partitions, p)
		}
		r.Topics = append(r.Topics, t)
	}
	r.Topics[3].Partitions[7].ErrorCode = 6
	return r
}

// benchFetch is a Fetch answer of 10 topics of 100 partitions, all clean.
func benchFetch() *wire.FetchResponse {
	r := &wire.FetchResponse{FetchResponse: *kmsg.NewPtrFetchResponse()}
	r.Topics = make([]kmsg.FetchResponseTopic, 10)
	for i := range r.Topics {
		r.Topics[i].Default()
		r.Topics[i].Partitions = make([]kmsg.FetchResponseTopicPartition, 100)
		for p := range r.Topics[i].Partitions {
			r.Topics[i].Partitions[p].Default()
			r.Topics[i].Partitions[p].Partition = int32(p)
		}
	}
	return r
}

// The error_code label is read from every response the broker sends.
func BenchmarkResponseCode(b *testing.B) {
	for _, bc := range []struct {
		name string
		resp kmsg.Response
		want string
	}{
		{"ShareFetch1000", benchShareFetch(), "6"},
		{"Fetch1000", benchFetch(), "0"},
		{"JoinGroup", &kmsg.JoinGroupResponse{ErrorCode: 25}, "25"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if got := responseCode(bc.resp); got != bc.want {
					b.Fatalf("code %s, want %s", got, bc.want)
				}
			}
		})
	}
}

// BenchmarkMetricsRequest is the whole per-request metric path for a large
// ShareFetch answer: the node label, labels, histogram, error codes and
// delivery counts.
func BenchmarkMetricsRequest(b *testing.B) {
	m := metrics.New(metrics.Config{Registry: prometheus.NewRegistry(), Lazy: true, FirstNode: 0, Nodes: 3})
	resp := benchShareFetch()
	start := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		countRequest(m, m.Node(2), 78, resp, nil, start)
	}
}
