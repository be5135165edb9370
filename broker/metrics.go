package broker

import (
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/group"
	"github.com/sharebroker/sharebroker/metrics"
	"github.com/sharebroker/sharebroker/sharepartition"
	"github.com/sharebroker/sharebroker/shareserve"
	"github.com/sharebroker/sharebroker/storage"
	"github.com/sharebroker/sharebroker/wire"
)

// The metrics package owns the broker's registry and every metric in it;
// this file is the broker's side of it: what a request, a response and a
// read error count as, and the state the collectors read at scrape time.

// newMetrics makes b's instruments on reg; own says the broker made reg,
// so filling it waits for its first reader (metrics.New).
func newMetrics(b *Broker, reg *prometheus.Registry, own bool) *metrics.Metrics {
	cfg := metrics.Config{
		Registry:   reg,
		Lazy:       own,
		FirstNode:  b.cfg.NodeID,
		Nodes:      b.cfg.Nodes,
		Authorizer: b.authz != nil,
		State:      metricsState{b},
		Clients:    b.clientMetrics,
	}
	for _, a := range apis {
		if a != nil {
			cfg.APIs = append(cfg.APIs, kmsg.NameForKey(a.key))
		}
	}
	if b.hasSASLListener() {
		cfg.SASLMechanisms = b.authn.Mechanisms()
	}
	return metrics.New(cfg)
}

// countRequest counts one answered request and its handling time; node is
// the label of the node it came to (metrics.Node). A ShareFetch answer's
// acquired records are counted by delivery count.
func countRequest(m *metrics.Metrics, node string, key int16, resp kmsg.Response, err error, start time.Time) {
	code := metrics.CodeClosed
	if err == nil {
		code = responseCode(resp)
	}
	m.Request(node, kmsg.NameForKey(key), code, start)
	if fr, ok := resp.(*wire.ShareFetchResponse); ok {
		for i := range fr.Topics {
			for j := range fr.Topics[i].Partitions {
				for _, ar := range fr.Topics[i].Partitions[j].AcquiredRecords {
					m.Delivered(ar.DeliveryCount, ar.LastOffset-ar.FirstOffset+1)
				}
			}
		}
	}
}

// readRejectReason classifies why reading a frame failed, or returns ""
// when the client simply went away or the broker is shutting down.
func readRejectReason(err error) string {
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, os.ErrDeadlineExceeded):
		return ""
	case errors.Is(err, io.ErrUnexpectedEOF):
		return metrics.RejectTruncated
	case errors.Is(err, wire.ErrFrameTooLarge):
		return metrics.RejectTooLarge
	case errors.Is(err, wire.ErrFrameSize):
		return metrics.RejectBadSize
	case errors.Is(err, wire.ErrHTTPOnKafka):
		return metrics.RejectHTTP
	case errors.Is(err, wire.ErrTLSOnPlaintext):
		return metrics.RejectTLS
	}
	return metrics.RejectOtherReadErr
}

// responseCode is the error_code label of resp: "0" when every ErrorCode
// field in it is zero, the code when the non-zero ones all agree, else
// metrics.CodeMixed. A nil response (Produce with acks=0) is "0".
func responseCode(resp kmsg.Response) string {
	first, mixed := wire.ResponseCodes(resp)
	switch {
	case mixed:
		return metrics.CodeMixed
	case first == 0:
		return "0"
	}
	return strconv.Itoa(int(first))
}

// metricsState is what the collectors read of the broker at scrape time.
type metricsState struct{ b *Broker }

func (s metricsState) Connections(count func(node int32)) {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	for conn := range s.b.conns {
		count(conn.node())
	}
}

func (s metricsState) LockTimers() int { return s.b.shareServing.LockTimers() }

func (s metricsState) ShareCounters() *sharepartition.Counters { return s.b.shareServing.Counters() }

func (s metricsState) SharePartitions(each func(metrics.SharePartition)) {
	for _, p := range s.b.shareServing.All() {
		t := s.b.store.TopicByID(p.Key.TopicID)
		if t == nil {
			continue
		}
		st := p.Part.Share.Stats()
		fl := p.Part.FetchLock.Snapshot()
		each(metrics.SharePartition{
			Group: p.Key.Group, Topic: t.Name, Partition: p.Key.Partition, Stats: st,
			FetchLockTime: metrics.Histogram{Bounds: shareserve.FetchLockTimeBounds[:],
				Counts: fl.TimeBuckets[:], Sum: fl.TimeSum.Seconds()},
			FetchLockRatio: metrics.Histogram{Bounds: shareserve.FetchLockRatioBounds[:],
				Counts: fl.RatioBuckets[:], Sum: fl.RatioSum},
		})
	}
}

func (s metricsState) ShareSessions(node int32) metrics.SessionCache {
	st := s.b.shareServing.Sessions.StatsOn(node)
	return metrics.SessionCache{Sessions: st.Sessions, Partitions: st.Partitions, Evictions: st.Evictions}
}

func (s metricsState) FetchSessions(node int32) metrics.SessionCache {
	st := s.b.fetchSessionsOf(node).Stats()
	return metrics.SessionCache{Sessions: st.Sessions, Partitions: st.Partitions, Evictions: st.Evictions}
}

func (s metricsState) ShareGroups(each func(group.ShareGroupState)) {
	for _, g := range s.b.shareGroups.List() {
		each(g.State)
	}
}

func (s metricsState) ShareRebalances() int64 { return s.b.shareGroups.Rebalances() }

func (s metricsState) TopicName(id storage.TopicID) (string, bool) { return s.b.store.TopicName(id) }

func (s metricsState) DeadLetters(written func(string, sharepartition.DeadLetterReason, int64), dropped func(int, int64)) {
	for k, n := range s.b.shareServing.DeadLettersWritten() {
		written(k.Group, k.Reason, n)
	}
	for cause, n := range s.b.shareServing.DeadLettersDropped() {
		dropped(cause, n)
	}
}
