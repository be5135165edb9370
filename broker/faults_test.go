package broker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/broker"
	"github.com/sharebroker/sharebroker/httpapi"
)

// faultEnv is a broker with the test API on, its HTTP base URL and a kgo
// producer on it.
type faultEnv struct {
	t    *testing.T
	ctx  context.Context
	base string
	cl   *kgo.Client
}

func newFaultEnv(t *testing.T) *faultEnv {
	t.Helper()
	b, addr := startBroker(t, broker.Config{EnableTestAPI: true, HTTP: "127.0.0.1:0"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation(), kgo.RetryBackoffFn(func(int) time.Duration { return 10 * time.Millisecond }),
		// kgo refreshes metadata after NOT_LEADER or a dropped connection,
		// at most once per MetadataMinAge (5 s by default).
		kgo.MetadataMinAge(10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &faultEnv{t: t, ctx: ctx, base: "http://" + b.HTTPAddr().String(), cl: cl}
}

func (e *faultEnv) arm(body string) httpapi.FaultJSON {
	e.t.Helper()
	status, out := httpPost(e.t, e.base+"/v1/test/faults", body)
	if status != http.StatusCreated {
		e.t.Fatalf("arm %s: %d %s", body, status, out)
	}
	var f httpapi.FaultJSON
	if err := json.Unmarshal(out, &f); err != nil {
		e.t.Fatal(err)
	}
	return f
}

func (e *faultEnv) armed() []httpapi.FaultJSON {
	e.t.Helper()
	status, out := httpGet(e.t, e.base+"/v1/test/faults")
	if status != http.StatusOK {
		e.t.Fatalf("list faults: %d %s", status, out)
	}
	var fs []httpapi.FaultJSON
	if err := json.Unmarshal(out, &fs); err != nil {
		e.t.Fatal(err)
	}
	return fs
}

// produceOnce produces one record and checks it landed exactly once: the
// topic's end offset is 1.
func (e *faultEnv) produceOnce(topic string) time.Duration {
	e.t.Helper()
	start := time.Now()
	if err := e.cl.ProduceSync(e.ctx, &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr(); err != nil {
		e.t.Fatalf("produce to %s: %v", topic, err)
	}
	took := time.Since(start)
	ends, err := kadm.NewClient(e.cl).ListEndOffsets(e.ctx, topic)
	if err != nil {
		e.t.Fatal(err)
	}
	if o, ok := ends.Lookup(topic, 0); !ok || o.Err != nil || o.Offset != 1 {
		e.t.Fatalf("end offset of %s: %+v (found %v), want 1: the record must land once", topic, o, ok)
	}
	return took
}

// createTopic makes the topic exist before a Produce fault is armed, so the
// fault meets Produce requests only.
func (e *faultEnv) createTopic(topic string) {
	e.t.Helper()
	if _, err := kadm.NewClient(e.cl).CreateTopic(e.ctx, 1, 1, nil, topic); err != nil {
		e.t.Fatal(err)
	}
}

// A retriable error on Produce is retried by kgo; the failed attempts
// appended nothing, so the record lands once.
func TestFaultProduceErrorRetried(t *testing.T) {
	for _, code := range []int16{kerr.NotLeaderForPartition.Code, kerr.RequestTimedOut.Code} {
		t.Run(kerr.ErrorForCode(code).Error(), func(t *testing.T) {
			e := newFaultEnv(t)
			e.createTopic("t")
			e.createTopic("other")
			f := e.arm(fmt.Sprintf(`{"api_key":0,"count":2,"error_code":%d,"topic":"t"}`, code))
			if f.ID == 0 || f.API != "Produce" || f.Count != 2 {
				t.Fatalf("armed %+v", f)
			}
			e.produceOnce("other") // another topic: not matched
			if fs := e.armed(); len(fs) != 1 || fs[0].Count != 2 {
				t.Fatalf("after a produce to another topic: %+v", fs)
			}
			e.produceOnce("t")
			if fs := e.armed(); len(fs) != 0 {
				t.Fatalf("fault still armed after two produces to t: %+v", fs)
			}
			got := metricValue(t, scrape(t, e.base), "sharebroker_requests_total",
				map[string]string{"api": "Produce", "error_code": fmt.Sprint(code)})
			if got != 2 {
				t.Fatalf("Produce answers with error %d: %v, want 2", code, got)
			}
		})
	}
}

// A client sees the injected code itself, and the next request is normal.
func TestFaultErrorSeenByClient(t *testing.T) {
	e := newFaultEnv(t)
	e.arm(`{"api_key":10,"error_code":15,"group":"g"}`)
	for i, want := range []int16{kerr.CoordinatorNotAvailable.Code, 0} {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey = "g"
		req.CoordinatorKeys = []string{"g"}
		resp, err := req.RequestWith(e.ctx, e.cl)
		if err != nil {
			t.Fatal(err)
		}
		code := resp.ErrorCode
		if len(resp.Coordinators) == 1 {
			code = resp.Coordinators[0].ErrorCode
		}
		if code != want {
			t.Fatalf("FindCoordinator %d (v%d): error %d, want %d", i, resp.Version, code, want)
		}
	}
}

func TestFaultLatency(t *testing.T) {
	e := newFaultEnv(t)
	e.createTopic("t")
	e.arm(`{"api_key":0,"latency":"200ms"}`)
	if took := e.produceOnce("t"); took < 200*time.Millisecond {
		t.Fatalf("produce with 200ms injected latency took %v", took)
	}
	if fs := e.armed(); len(fs) != 0 {
		t.Fatalf("latency fault still armed: %+v", fs)
	}
}

// A dropped connection is reopened by kgo, and the produce it retries on
// the new one lands once: the dropped request was never handled.
func TestFaultDropReconnects(t *testing.T) {
	e := newFaultEnv(t)
	e.createTopic("t")
	e.arm(`{"api_key":0,"drop":true}`)
	e.produceOnce("t")
	if fs := e.armed(); len(fs) != 0 {
		t.Fatalf("drop fault still armed: %+v", fs)
	}
	if got := metricValue(t, scrape(t, e.base), "sharebroker_requests_total",
		map[string]string{"api": "Produce", "error_code": "closed"}); got != 1 {
		t.Fatalf("Produce requests answered by closing: %v, want 1", got)
	}
}

func TestFaultListAndClear(t *testing.T) {
	e := newFaultEnv(t)
	e.arm(`{"api_key":3,"count":5,"latency":"1s","topic":"x"}`)
	e.arm(`{"api_key":11,"error_code":16,"group":"g"}`)
	fs := e.armed()
	if len(fs) != 2 || fs[0].API != "Metadata" || fs[0].Count != 5 || fs[0].Latency != "1s" || fs[1].Group != "g" {
		t.Fatalf("armed: %+v", fs)
	}
	req, err := http.NewRequest(http.MethodDelete, e.base+"/v1/test/faults", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(e.armed()) != 0 {
		t.Fatalf("DELETE: %d, left %+v", resp.StatusCode, e.armed())
	}
	for _, body := range []string{``, `{}`, `{"api_key":0}`, `{"api_key":0,"drop":true,"latency":"1s"}`,
		`{"api_key":0,"latency":"2m"}`, `{"api_key":99,"drop":true}`, `{"api_key":0,"drop":true,"id":4}`, `{"api_key":0,"colour":"red"}`} {
		if status, out := httpPost(t, e.base+"/v1/test/faults", body); status != http.StatusBadRequest {
			t.Errorf("POST %s: %d %s, want 400", body, status, out)
		}
	}
}

func TestFaultEndpointsNeedTestAPI(t *testing.T) {
	b, _ := startBroker(t, broker.Config{HTTP: "127.0.0.1:0"})
	base := "http://" + b.HTTPAddr().String()
	if status, _ := httpGet(t, base+"/v1/test/faults"); status != http.StatusNotFound {
		t.Errorf("GET faults: %d, want 404", status)
	}
	if status, _ := httpPost(t, base+"/v1/test/faults", `{"api_key":0,"drop":true}`); status != http.StatusNotFound {
		t.Errorf("POST faults: %d, want 404", status)
	}
	req, _ := http.NewRequest(http.MethodDelete, base+"/v1/test/faults", strings.NewReader(""))
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("DELETE faults: %d, want 404", resp.StatusCode)
	}
}
