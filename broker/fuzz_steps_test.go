package broker

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/locktimer"
	"github.com/sharebroker/sharebroker/wire"
)

// A sequence fuzz input is a run of steps against one broker, so that
// join → sync → commit → heartbeat and similar conversations get explored,
// not single requests. Its first byte configures the broker (fuzzConfig);
// then each step is
//
//	op      1 byte: op % (len(keys)+1) picks keys[i]; the last value
//	        advances the clock instead, by the next 2 bytes (big endian)
//	        times fuzzClockUnit
//	version 1 byte: minVersion + version % (versions the broker registers)
//	length  2 bytes, big endian
//	body    length bytes (fewer if the input ends)
//
// An input that ends inside a step's head ends the run.
const (
	fuzzMaxSteps  = 16
	fuzzClockUnit = 100 * time.Millisecond
	// fuzzClientID is every request's client ID: classic member IDs are
	// "c-1", "c-2", ... in the order the broker makes them.
	fuzzClientID = "c"
	// fuzzCallTimeout is how long a handler may take to return or to park
	// in a group round; fuzzHangTimeout how long a parked call may take
	// to return once the clock has passed every timeout.
	fuzzCallTimeout = 2 * time.Second
	fuzzHangTimeout = 2 * time.Second
)

// fuzzStep is one step of a seed: a request, or a clock advance when req is
// nil.
type fuzzStep struct {
	req     kmsg.Request
	advance time.Duration
}

// encodeSteps builds a seed from steps for a target sending keys, on a
// broker configured by flags (fuzzConfig).
func encodeSteps(t testing.TB, keys []int16, flags byte, steps ...fuzzStep) []byte {
	t.Helper()
	out := []byte{flags}
	for _, s := range steps {
		if s.req == nil {
			out = append(out, byte(len(keys)))
			out = binary.BigEndian.AppendUint16(out, uint16(s.advance/fuzzClockUnit))
			continue
		}
		i := indexOf(keys, s.req.Key())
		a := lookupAPI(s.req.Key())
		v := s.req.GetVersion()
		if i < 0 || a == nil || v < a.minVersion || v > a.maxVersion {
			t.Fatalf("seed %s v%d is not one this target sends", kmsg.NameForKey(s.req.Key()), v)
		}
		body := s.req.AppendTo(nil)
		out = append(out, byte(i), byte(v-a.minVersion))
		out = binary.BigEndian.AppendUint16(out, uint16(len(body)))
		out = append(out, body...)
	}
	return out
}

func indexOf(keys []int16, key int16) int {
	for i, k := range keys {
		if k == key {
			return i
		}
	}
	return -1
}

// fuzzCall is one handler call in flight.
type fuzzCall struct {
	key, version int16
	// mayBeSilent: Produce with acks=0 answers nothing, and closes the
	// connection (an error) if it fails.
	mayBeSilent bool
	done        chan fuzzResult
	// answered, set when the call parked, reports whether the group
	// package has sent the call its answer.
	answered func() bool
}

type fuzzResult struct {
	resp kmsg.Response
	err  error
}

// fuzzSeq runs sequence inputs against a never-started broker (fuzzBroker)
// whose joins complete at once. Handler calls run in goroutines: a call
// that parks in a JoinGroup or SyncGroup round (awaitHook) stays in flight
// while later steps run, as on another connection, so a second member's
// join can complete the first's round.
type fuzzSeq struct {
	t        *testing.T
	b        *Broker
	c        *conn
	clock    *locktimer.ManualClock
	keys     []int16
	parked   chan func() bool
	inflight []*fuzzCall
	// check runs after every step: the invariants of the target's domain.
	check func()
	// closeParked: run closes the broker with calls parked (fuzzCloseParked).
	closeParked bool
	// finish, if set, runs once no call is parked, before describeAll:
	// the target's end-of-input checks.
	finish func()
}

// Flags of the first input byte, each a broker property set away from the
// fuzz default.
const (
	// fuzzInitialDelay keeps Kafka's default initial rebalance delay of
	// 3 s: the first join of a group parks until the clock passes it.
	// Without it the delay is 0 and a lone member's join completes at once.
	fuzzInitialDelay = 1 << iota
	// fuzzSmallGroups caps classic, KIP-848 and share groups at two
	// members.
	fuzzSmallGroups
	// fuzzShortTxnIDs forgets idle transactional IDs after a minute.
	fuzzShortTxnIDs
	// fuzzCloseParked closes the broker while calls are still parked
	// instead of letting the clock finish their rounds: Close must answer
	// them.
	fuzzCloseParked
)

// fuzzConfig is the broker properties flags ask for.
func fuzzConfig(flags byte) map[string]string {
	props := map[string]string{"group.initial.rebalance.delay.ms": "0"}
	if flags&fuzzInitialDelay != 0 {
		props["group.initial.rebalance.delay.ms"] = "3000"
	}
	if flags&fuzzSmallGroups != 0 {
		props["group.max.size"], props["group.consumer.max.size"], props["group.share.max.size"] = "2", "2", "2"
	}
	if flags&fuzzShortTxnIDs != 0 {
		props["transactional.id.expiration.ms"] = "60000"
	}
	return props
}

// fuzzSequence runs one sequence input for a target sending keys.
func fuzzSequence(t *testing.T, keys []int16, data []byte, finish func(*fuzzSeq)) {
	if len(data) == 0 {
		return
	}
	s := newFuzzSeq(t, keys, fuzzConfig(data[0]))
	s.closeParked = data[0]&fuzzCloseParked != 0
	if finish != nil {
		s.finish = func() { finish(s) }
	}
	s.run(data[1:])
}

func newFuzzSeq(t *testing.T, keys []int16, props map[string]string) *fuzzSeq {
	b, c, _ := fuzzBrokerWith(t, props)
	s := &fuzzSeq{t: t, b: b, c: c, clock: b.clock.(*locktimer.ManualClock), keys: keys, parked: make(chan func() bool)}
	b.awaitHook = func(answered func() bool) { s.parked <- answered }
	s.check = s.checkDomains
	return s
}

// run plays data, then lets every parked call finish, checks that the
// broker still answers describe and list requests, and closes it.
func (s *fuzzSeq) run(data []byte) {
	for range fuzzMaxSteps {
		if len(data) < 3 {
			break
		}
		op := int(data[0]) % (len(s.keys) + 1)
		if op == len(s.keys) {
			s.clock.Advance(time.Duration(binary.BigEndian.Uint16(data[1:3])) * fuzzClockUnit)
			data = data[3:]
		} else {
			if len(data) < 4 {
				break
			}
			a := lookupAPI(s.keys[op])
			version := a.minVersion + int16(int(data[1])%int(a.maxVersion-a.minVersion+1))
			n := min(int(binary.BigEndian.Uint16(data[2:4])), len(data)-4)
			body := withTopicID(data[4:4+n], s.b.store.Topic("t").ID)
			data = data[4+n:]
			s.call(a.key, version, body)
		}
		// Timers due now (a zero delay, a past deadline) fire as a real
		// clock would fire them, before the next request.
		s.clock.Advance(0)
		s.collect()
		s.check()
	}
	if s.closeParked {
		s.close()
		return
	}
	s.drain()
	s.check()
	if s.finish != nil {
		s.finish()
	}
	s.describeAll()
	s.close()
}

// call decodes body and runs it through the handler. It returns the answer,
// or nil when the body does not decode (the connection would be closed
// before any handler) or the call parked.
func (s *fuzzSeq) call(key, version int16, body []byte) kmsg.Response {
	s.t.Helper()
	h := wire.Header{APIKey: key, APIVersion: version, ClientID: fuzzClientID}
	req, err := wire.DecodeBody(h, body)
	if err != nil {
		return nil
	}
	c := &fuzzCall{key: key, version: version, done: make(chan fuzzResult, 1)}
	if p, ok := req.(*kmsg.ProduceRequest); ok {
		c.mayBeSilent = p.Acks == 0
	}
	go func() {
		resp, err := lookupAPI(key).handle(s.b, &request{conn: s.c, header: h, body: req})
		c.done <- fuzzResult{resp, err}
	}()
	select {
	case r := <-c.done:
		return s.answer(c, r)
	case c.answered = <-s.parked:
		s.inflight = append(s.inflight, c)
		return nil
	case <-time.After(fuzzCallTimeout):
		s.t.Fatalf("%s v%d neither returned nor parked in a group round within %v", kmsg.NameForKey(key), version, fuzzCallTimeout)
		return nil
	}
}

// answer checks one call's result: no error, and an answer that encodes.
func (s *fuzzSeq) answer(c *fuzzCall, r fuzzResult) kmsg.Response {
	s.t.Helper()
	if c.mayBeSilent && (r.err != nil || r.resp == nil) {
		return nil
	}
	if r.err != nil || r.resp == nil {
		s.t.Fatalf("%s v%d: handler returned %v, %v", kmsg.NameForKey(c.key), c.version, r.resp, r.err)
	}
	r.resp.SetVersion(c.version)
	wire.AppendResponse(nil, 1, r.resp)
	return r.resp
}

// collect checks the parked calls that have finished and keeps the others.
// One the group package has answered finishes at once, so it is waited for.
func (s *fuzzSeq) collect() {
	s.t.Helper()
	waiting := s.inflight[:0]
	for _, c := range s.inflight {
		var r fuzzResult
		select {
		case r = <-c.done:
		default:
			if !c.answered() {
				waiting = append(waiting, c)
				continue
			}
			select {
			case r = <-c.done:
			case <-time.After(fuzzHangTimeout):
				s.t.Fatalf("%s v%d was answered by its group but did not return within %v", kmsg.NameForKey(c.key), c.version, fuzzHangTimeout)
			}
		}
		s.answer(c, r)
	}
	s.inflight = waiting
}

// drain advances the clock, doubling the step, past every timeout a request
// can set (an int32 of milliseconds: under 2^22 s in all) until no call is
// parked. A call still parked then is a hang.
func (s *fuzzSeq) drain() {
	s.t.Helper()
	for d := time.Second; len(s.inflight) > 0 && d <= 1<<22*time.Second; d *= 2 {
		s.clock.Advance(d)
		s.collect()
	}
	for _, c := range s.inflight {
		select {
		case r := <-c.done:
			s.answer(c, r)
		case <-time.After(fuzzHangTimeout):
			s.t.Fatalf("%s v%d still waits after the clock passed every timeout", kmsg.NameForKey(c.key), c.version)
		}
	}
	s.inflight = nil
}

// checkDomains checks the group, share and transaction coordinators'
// invariants, and that no transaction is left half-completed while no call
// runs.
func (s *fuzzSeq) checkDomains() {
	s.t.Helper()
	for _, err := range []error{s.b.classicGroups.CheckInvariants(), s.b.consumerGroups.CheckInvariants(), s.b.txns.CheckInvariants()} {
		if err != nil {
			s.t.Fatal(err)
		}
	}
	checkShareInvariants(s.t, s.b)
	if len(s.inflight) == 0 {
		for _, d := range s.b.txns.List() {
			if st := d.State.String(); st == "PrepareCommit" || st == "PrepareAbort" {
				s.t.Fatalf("transaction %s left in %s", d.TransactionalID, st)
			}
		}
	}
}

// describeAll asks about every group and transaction the broker lists, at
// each API's newest version, through the handlers: each must answer and
// encode.
func (s *fuzzSeq) describeAll() {
	s.t.Helper()
	ask := func(req kmsg.Request) kmsg.Response {
		req.SetVersion(lookupAPI(req.Key()).maxVersion)
		resp := s.call(req.Key(), req.GetVersion(), req.AppendTo(nil))
		if resp == nil {
			s.t.Fatalf("%s did not answer", kmsg.NameForKey(req.Key()))
		}
		return resp
	}
	lg := ask(kmsg.NewPtrListGroupsRequest()).(*kmsg.ListGroupsResponse)
	var groups []string
	for _, g := range lg.Groups {
		groups = append(groups, g.Group)
	}
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = groups
	ask(dg)
	cd := kmsg.NewPtrConsumerGroupDescribeRequest()
	cd.Groups = groups
	ask(cd)
	of := kmsg.NewPtrOffsetFetchRequest()
	for _, g := range groups {
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = g
		of.Groups = append(of.Groups, rg)
	}
	ask(of)
	lt := ask(kmsg.NewPtrListTransactionsRequest()).(*kmsg.ListTransactionsResponse)
	dt := kmsg.NewPtrDescribeTransactionsRequest()
	for _, tx := range lt.TransactionStates {
		dt.TransactionalIDs = append(dt.TransactionalIDs, tx.TransactionalID)
	}
	ask(dt)
}

// close closes the broker, which must not hang.
func (s *fuzzSeq) close() {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.b.Close(ctx) }()
	select {
	case err := <-done:
		if err != nil {
			s.t.Fatalf("Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		s.t.Fatal("Close hung")
	}
	// A call parked at Close is answered by it; its connection would be
	// closed, so an error is its due.
	for _, c := range s.inflight {
		select {
		case <-c.done:
		case <-time.After(fuzzHangTimeout):
			s.t.Fatalf("%s v%d still waits after Close", kmsg.NameForKey(c.key), c.version)
		}
	}
	s.inflight = nil
}
