package sharebrokertest_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/wire"
)

// wireTap records, for a test that has to explain a stuck consumer, the
// share conversation a client had with each node as the bytes crossed the
// socket: every ShareGroupHeartbeat, ShareFetch and ShareAcknowledge
// request and answer, and what each Metadata answer said about the
// partitions' leaders. It sits in the client's dialer (kgo.Dialer), so it
// sees exactly what the broker was sent and what it answered, per
// connection and node, without any hook in the broker.
type wireTap struct {
	start time.Time
	nodes map[string]int32 // dialed host:port -> node ID

	mu         sync.Mutex
	events     []tapEvent
	refusals   []ackRefusal
	deliveries []delivery
}

// delivery is one range of records a ShareFetch answer handed a member.
type delivery struct {
	member      string
	partition   int32
	first, last int64
	at          time.Duration // when the answer was read
}

// ackRefusal is one partition's acknowledgements a node refused: what
// the member had asked, and the code it got.
type ackRefusal struct {
	member    string
	node      int32
	partition int32
	code      int16
	acks      [][2]int64    // first and last offset of each batch
	sentAt    time.Duration // when the request was written
}

// sentAcks is what a request acknowledged, kept until its answer.
type sentAcks struct {
	member string
	acks   map[int32][][2]int64
	at     time.Duration
}

// tapEvent is one request or answer of the share conversation.
type tapEvent struct {
	at     time.Duration // since the tap started
	client string        // which consumer
	node   int32
	conn   int
	text   string
	parts  []int32 // the partitions it names; nil for group-level events
}

// maxTapEvents bounds what one run keeps: enough for a run's share
// conversation (a few thousand fetches), not a leak if one spins.
const maxTapEvents = 200_000

func newWireTap(nodeAddrs []string) *wireTap {
	w := &wireTap{start: time.Now(), nodes: map[string]int32{}}
	for i, a := range nodeAddrs {
		w.nodes[a] = int32(i)
	}
	return w
}

// dialer is the kgo.Dialer of one client, named client in the events.
func (w *wireTap) dialer(client string) func(ctx context.Context, network, host string) (net.Conn, error) {
	var conns sync.Mutex
	n := 0
	return func(ctx context.Context, network, host string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, network, host)
		if err != nil {
			return nil, err
		}
		conns.Lock()
		n++
		id := n
		conns.Unlock()
		node, ok := w.nodes[host]
		if !ok {
			node = -1
		}
		return &tapConn{Conn: c, w: w, client: client, node: node, id: id, sent: map[int32]wire.Header{}}, nil
	}
}

func (w *wireTap) add(e tapEvent) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.events) < maxTapEvents {
		e.at = time.Since(w.start)
		w.events = append(w.events, e)
	}
}

// dump writes the events since from that name partition p (or name no
// partition: heartbeats, metadata, session-level fetches): the first head
// of them and the last tail.
func (w *wireTap) dump(sb *strings.Builder, from time.Duration, p int32, head, tail int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var keep []tapEvent
	for _, e := range w.events {
		if e.at < from {
			continue
		}
		if e.parts != nil && !containsPart(e.parts, p) {
			continue
		}
		keep = append(keep, e)
	}
	for i, e := range keep {
		if i == head && len(keep) > head+tail {
			fmt.Fprintf(sb, "  ... %d events\n", len(keep)-head-tail)
		}
		if i >= head && i < len(keep)-tail {
			continue
		}
		fmt.Fprintf(sb, "  %8.3fs %s node %d conn %d: %s\n", e.at.Seconds(), e.client, e.node, e.conn, e.text)
	}
}

// note records a step of the test among the events.
func (w *wireTap) note(text string) {
	w.add(tapEvent{client: "test", node: -1, text: text})
}

func containsPart(ps []int32, p int32) bool {
	for _, q := range ps {
		if q == p {
			return true
		}
	}
	return false
}

// tapConn is one tapped connection: it parses the frames each way as they
// pass, keeping the request headers to decode the answers.
type tapConn struct {
	net.Conn
	w          *wireTap
	client     string
	node       int32
	id         int
	mu         sync.Mutex
	out, in    []byte
	sent       map[int32]wire.Header // correlation ID -> request header
	sentShares map[int32][]int32     // correlation ID -> partitions the request named
	sentAcks   map[int32]sentAcks    // correlation ID -> what the request acknowledged
}

func (c *tapConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.mu.Lock()
	c.out = eachFrame(append(c.out, b[:n]...), c.request)
	c.mu.Unlock()
	return n, err
}

func (c *tapConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.mu.Lock()
	c.in = eachFrame(append(c.in, b[:n]...), c.response)
	c.mu.Unlock()
	return n, err
}

// eachFrame hands every whole frame at the start of buf to decode and
// returns the bytes of the frame not yet whole.
func eachFrame(buf []byte, decode func(frame []byte)) []byte {
	for {
		frame, rest, ok := nextFrame(buf)
		if !ok {
			return buf
		}
		decode(frame)
		buf = rest
	}
}

func (c *tapConn) Close() error {
	c.w.add(tapEvent{client: c.client, node: c.node, conn: c.id, text: "connection closed by the client"})
	return c.Conn.Close()
}

// nextFrame cuts one size-prefixed frame off buf, copied.
func nextFrame(buf []byte) (frame, rest []byte, ok bool) {
	if len(buf) < 4 {
		return nil, buf, false
	}
	size := int(binary.BigEndian.Uint32(buf))
	if len(buf) < 4+size {
		return nil, buf, false
	}
	return append([]byte(nil), buf[4:4+size]...), buf[4+size:], true
}

// tapped are the APIs the tap decodes.
func tapped(key int16) bool {
	switch kmsg.Key(key) {
	case kmsg.ShareFetch, kmsg.ShareAcknowledge, kmsg.ShareGroupHeartbeat, kmsg.Metadata:
		return true
	}
	return false
}

func (c *tapConn) request(frame []byte) {
	h, body, err := wire.ParseHeader(frame)
	if err != nil || !tapped(h.APIKey) {
		return
	}
	c.sent[h.CorrelationID] = h
	req, err := wire.DecodeBody(h, body)
	if err != nil {
		c.w.add(tapEvent{client: c.client, node: c.node, conn: c.id, text: fmt.Sprintf("%s: undecodable: %v", kmsg.NameForKey(h.APIKey), err)})
		return
	}
	text, parts := describeRequest(req)
	if text == "" {
		return
	}
	if c.sentShares == nil {
		c.sentShares = map[int32][]int32{}
	}
	c.sentShares[h.CorrelationID] = parts
	if member, acks := requestAcks(req); member != "" {
		if c.sentAcks == nil {
			c.sentAcks = map[int32]sentAcks{}
		}
		c.sentAcks[h.CorrelationID] = sentAcks{member, acks, time.Since(c.w.start)}
	}
	c.w.add(tapEvent{client: c.client, node: c.node, conn: c.id, text: fmt.Sprintf("-> %s v%d #%d %s", kmsg.NameForKey(h.APIKey), h.APIVersion, h.CorrelationID, text), parts: parts})
}

func (c *tapConn) response(frame []byte) {
	if len(frame) < 4 {
		return
	}
	corr := int32(binary.BigEndian.Uint32(frame))
	h, ok := c.sent[corr]
	if !ok {
		return
	}
	delete(c.sent, corr)
	reqParts := c.sentShares[corr]
	delete(c.sentShares, corr)
	asked := c.sentAcks[corr]
	delete(c.sentAcks, corr)
	body := frame[4:]
	resp := kmsg.ResponseForKey(h.APIKey)
	resp.SetVersion(h.APIVersion)
	if resp.IsFlexible() {
		// A flexible answer's header ends in tagged fields; kgo's answers
		// here carry none, so the section is a single zero count.
		if len(body) == 0 || body[0] != 0 {
			c.w.add(tapEvent{client: c.client, node: c.node, conn: c.id, text: "answer header with tagged fields: not decoded"})
			return
		}
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		c.w.add(tapEvent{client: c.client, node: c.node, conn: c.id, text: fmt.Sprintf("%s answer undecodable: %v", kmsg.NameForKey(h.APIKey), err)})
		return
	}
	c.w.mu.Lock()
	for p, code := range ackCodes(resp) {
		if code != 0 && len(asked.acks[p]) > 0 {
			c.w.refusals = append(c.w.refusals, ackRefusal{member: asked.member, node: c.node, partition: p, code: code, acks: asked.acks[p], sentAt: asked.at})
		}
	}
	if f, ok := resp.(*kmsg.ShareFetchResponse); ok {
		for _, t := range f.Topics {
			for _, p := range t.Partitions {
				for _, a := range p.AcquiredRecords {
					c.w.deliveries = append(c.w.deliveries, delivery{asked.member, p.Partition, a.FirstOffset, a.LastOffset, time.Since(c.w.start)})
				}
			}
		}
	}
	c.w.mu.Unlock()
	text, parts := describeResponse(resp)
	if text == "" {
		return
	}
	if parts == nil {
		parts = reqParts // an answer with a top-level error concerns what was asked
	}
	c.w.add(tapEvent{client: c.client, node: c.node, conn: c.id, text: fmt.Sprintf("<- %s #%d %s", kmsg.NameForKey(h.APIKey), corr, text), parts: parts})
}

func shortID(id string) string {
	if len(id) > 6 {
		return id[:6]
	}
	return id
}

func ackText(first, last int64, types []int8) string {
	return fmt.Sprintf("%d-%d%v", first, last, types)
}

// requestAcks is the member and the acknowledgement batches, by
// partition, of a ShareFetch or ShareAcknowledge request.
func requestAcks(req kmsg.Request) (string, map[int32][][2]int64) {
	acks := map[int32][][2]int64{}
	switch r := req.(type) {
	case *kmsg.ShareFetchRequest:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				for _, a := range p.AcknowledgementBatches {
					acks[p.Partition] = append(acks[p.Partition], [2]int64{a.FirstOffset, a.LastOffset})
				}
			}
		}
		return deref(r.MemberID), acks
	case *kmsg.ShareAcknowledgeRequest:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				for _, a := range p.AcknowledgementBatches {
					acks[p.Partition] = append(acks[p.Partition], [2]int64{a.FirstOffset, a.LastOffset})
				}
			}
		}
		return deref(r.MemberID), acks
	}
	return "", nil
}

// ackCodes is the acknowledgement outcome, by partition, of a ShareFetch
// or ShareAcknowledge answer.
func ackCodes(resp kmsg.Response) map[int32]int16 {
	codes := map[int32]int16{}
	switch r := resp.(type) {
	case *kmsg.ShareFetchResponse:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				codes[p.Partition] = p.AcknowledgeErrorCode
			}
		}
	case *kmsg.ShareAcknowledgeResponse:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				codes[p.Partition] = p.ErrorCode
			}
		}
	}
	return codes
}

// refusedCovering returns a refusal of member's acknowledgements on
// partition p that named an offset of [first, last] and was sent after
// the answer that last handed member any of those offsets: the member
// acknowledged what it held, and was refused.
func (w *wireTap) refusedCovering(member string, p int32, first, last int64) (ackRefusal, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delivered := time.Duration(-1)
	for _, d := range w.deliveries {
		if d.member == member && d.partition == p && d.first <= last && d.last >= first {
			delivered = max(delivered, d.at)
		}
	}
	for _, r := range w.refusals {
		if r.member != member || r.partition != p || r.sentAt < delivered {
			continue
		}
		for _, a := range r.acks {
			if a[0] <= last && a[1] >= first {
				return r, true
			}
		}
	}
	return ackRefusal{}, false
}

func describeRequest(req kmsg.Request) (string, []int32) {
	var sb strings.Builder
	var parts []int32
	switch r := req.(type) {
	case *kmsg.ShareFetchRequest:
		fmt.Fprintf(&sb, "member %s epoch %d maxwait %d", shortID(deref(r.MemberID)), r.ShareSessionEpoch, r.MaxWaitMillis)
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				parts = append(parts, p.Partition)
				fmt.Fprintf(&sb, " p%d", p.Partition)
				for _, a := range p.AcknowledgementBatches {
					fmt.Fprintf(&sb, " ack %s", ackText(a.FirstOffset, a.LastOffset, a.AcknowledgeTypes))
				}
			}
		}
		for _, t := range r.ForgottenTopicsData {
			for _, p := range t.Partitions {
				parts = append(parts, p)
				fmt.Fprintf(&sb, " forget p%d", p)
			}
		}
	case *kmsg.ShareAcknowledgeRequest:
		fmt.Fprintf(&sb, "member %s epoch %d", shortID(deref(r.MemberID)), r.ShareSessionEpoch)
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				parts = append(parts, p.Partition)
				fmt.Fprintf(&sb, " p%d", p.Partition)
				for _, a := range p.AcknowledgementBatches {
					fmt.Fprintf(&sb, " ack %s", ackText(a.FirstOffset, a.LastOffset, a.AcknowledgeTypes))
				}
			}
		}
	case *kmsg.ShareGroupHeartbeatRequest:
		fmt.Fprintf(&sb, "member %s epoch %d", shortID(r.MemberID), r.MemberEpoch)
	case *kmsg.MetadataRequest:
		return "", nil
	}
	return sb.String(), parts
}

func describeResponse(resp kmsg.Response) (string, []int32) {
	var sb strings.Builder
	var parts []int32
	switch r := resp.(type) {
	case *kmsg.ShareFetchResponse:
		fmt.Fprintf(&sb, "error %d", r.ErrorCode)
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				parts = append(parts, p.Partition)
				fmt.Fprintf(&sb, " | p%d err %d ackerr %d", p.Partition, p.ErrorCode, p.AcknowledgeErrorCode)
				for _, a := range p.AcquiredRecords {
					fmt.Fprintf(&sb, " acquired %d-%d d%d", a.FirstOffset, a.LastOffset, a.DeliveryCount)
				}
				if p.CurrentLeader.LeaderID != 0 || p.CurrentLeader.LeaderEpoch != 0 {
					fmt.Fprintf(&sb, " leader %d@%d", p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch)
				}
			}
		}
	case *kmsg.ShareAcknowledgeResponse:
		fmt.Fprintf(&sb, "error %d", r.ErrorCode)
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				parts = append(parts, p.Partition)
				fmt.Fprintf(&sb, " | p%d err %d", p.Partition, p.ErrorCode)
				if p.CurrentLeader.LeaderID != 0 || p.CurrentLeader.LeaderEpoch != 0 {
					fmt.Fprintf(&sb, " leader %d@%d", p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch)
				}
			}
		}
	case *kmsg.ShareGroupHeartbeatResponse:
		fmt.Fprintf(&sb, "error %d member %s epoch %d", r.ErrorCode, shortID(deref(r.MemberID)), r.MemberEpoch)
		if r.Assignment != nil {
			for _, tp := range r.Assignment.TopicPartitions {
				fmt.Fprintf(&sb, " assigned %v", tp.Partitions)
			}
		}
	case *kmsg.MetadataResponse:
		var nodes []int32
		for _, b := range r.Brokers {
			nodes = append(nodes, b.NodeID)
		}
		fmt.Fprintf(&sb, "brokers %v", nodes)
		for _, t := range r.Topics {
			if deref(t.Topic) == "" || strings.HasPrefix(deref(t.Topic), "__") {
				continue
			}
			fmt.Fprintf(&sb, " %s:", deref(t.Topic))
			for _, p := range t.Partitions {
				fmt.Fprintf(&sb, " p%d=%d@%d", p.Partition, p.Leader, p.LeaderEpoch)
			}
		}
	}
	return sb.String(), parts
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
