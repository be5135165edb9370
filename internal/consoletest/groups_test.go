package consoletest

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharebroker/sharebroker/httpapi"
	"github.com/sharebroker/sharebroker/sharebrokertest"
)

// GET /v1/groups lists groups of every kind with their type, and GET
// /v1/groups/{group} shows a classic or KIP-848 group's members, their
// decoded assignment and the committed offsets with log end and lag, over
// a real broker and real kgo consumers.
func TestGroupsOfEveryKind(t *testing.T) {
	b := sharebrokertest.Start(t, sharebrokertest.WithHTTP(), sharebrokertest.WithProperty("num.partitions", "1"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := kadm.NewClient(admin).CreateTopics(ctx, 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if err := admin.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	consume := func(group string, opts ...kgo.Opt) {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.Addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics("t"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.FetchMaxWait(200 * time.Millisecond)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		var last *kgo.Record
		for last == nil || last.Offset < 2 {
			if ctx.Err() != nil {
				t.Fatalf("%s consumed nothing", group)
			}
			cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
				if r.Offset <= 2 {
					last = r
				}
			})
		}
		if err := cl.CommitRecords(ctx, last); err != nil {
			t.Fatal(err)
		}
	}
	consume("classic-g")
	consume("kip848-g", kgo.ServerSideBalancer())

	get := func(path string, v any) int {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+b.HTTPAddr+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if v != nil && resp.StatusCode == 200 {
			if err := json.Unmarshal(body, v); err != nil {
				t.Fatalf("%s: %v: %s", path, err, body)
			}
		}
		return resp.StatusCode
	}
	var list struct{ Groups []httpapi.GroupJSON }
	get("/v1/groups", &list)
	types := map[string]string{}
	for _, g := range list.Groups {
		types[g.GroupID] = g.Type + "/" + g.State
	}
	if types["classic-g"] != "classic/Stable" || types["kip848-g"] != "consumer/Stable" || len(list.Groups) != 2 {
		t.Fatalf("groups %v", types)
	}
	for _, id := range []string{"classic-g", "kip848-g"} {
		var d httpapi.GroupDetailJSON
		if status := get("/v1/groups/"+id, &d); status != 200 {
			t.Fatalf("GET /v1/groups/%s: %d", id, status)
		}
		m := d.Group.Members
		if len(m) != 1 || len(m[0].Assignment) != 1 || m[0].Assignment[0].Topic != "t" || len(m[0].Assignment[0].Partitions) != 1 ||
			len(m[0].SubscribedTopics) != 1 {
			t.Errorf("%s members: %+v", id, m)
		}
		if len(d.Offsets) != 1 {
			t.Errorf("%s offsets %+v, want one", id, d.Offsets)
			continue
		}
		o := d.Offsets[0]
		if o.Topic != "t" || o.Partition != 0 || o.CommittedOffset != 3 || o.LogEndOffset != 5 || o.Lag != 2 {
			t.Errorf("%s offset %+v, want t-0 committed at 3, log end 5, lag 2", id, o)
		}
	}
	if status := get("/v1/groups/nobody", nil); status != 404 {
		t.Errorf("unknown group: %d, want 404", status)
	}
}
