package broker_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/broker"
)

// TestLargeAnswersOnManyConnections: answers over the buffer a connection
// keeps (1 MiB; here DescribeConfigs of 400 topics with documentation and
// synonyms, about 1.35 MB) are written from the one spare buffer the
// connections hand each other (wire.TakeResponseBuffer). Three connections
// ask at once, over and over, and every answer must be whole and right: no
// answer written from a buffer another connection is filling (the race
// detector watches too).
func TestLargeAnswersOnManyConnections(t *testing.T) {
	_, addr := startBroker(t, broker.Config{Listen: "127.0.0.1:0"})
	ctx, _, adm := newAdmin(t, addr)
	const topics = 400
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms, req.IncludeDocumentation = true, true
	var names []string
	for i := range topics {
		names = append(names, fmt.Sprintf("big-%03d", i))
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, names[i]
		req.Resources = append(req.Resources, r)
	}
	if _, err := adm.CreateTopics(ctx, 1, -1, nil, names...); err != nil {
		t.Fatal(err)
	}
	_, cl0, _ := newAdmin(t, addr)
	first, err := req.RequestWith(ctx, cl0)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(first.AppendTo(nil)); n <= 1<<20 {
		t.Fatalf("the answer is %d bytes: not over the 1 MiB a connection keeps, so the test tests nothing", n)
	}
	want := string(first.AppendTo(nil))
	const conns, asks = 3, 4
	errs := make(chan error, conns*asks)
	var wg sync.WaitGroup
	for range conns {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range asks {
				resp, err := req.RequestWith(ctx, cl)
				if err == nil && string(resp.AppendTo(nil)) != want {
					err = fmt.Errorf("an answer differs from the first (%d bytes, want %d)", len(resp.AppendTo(nil)), len(want))
				}
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}
