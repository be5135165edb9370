package broker_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/broker"
)

// TestMetadataAllTopicsByName pins the order of Metadata for all topics
// (rule metadata-all-by-name): every topic, sorted by name, whatever order
// they were created, deleted and created again in, each with the ID of
// the topic that now has the name. Asked between the changes, so the
// broker's kept listing (storage/listing.go) is merged and filtered many
// times over.
func TestMetadataAllTopicsByName(t *testing.T) {
	_, addr := startBroker(t, broker.Config{Listen: "127.0.0.1:0"})
	ctx, cl, adm := newAdmin(t, addr)
	rng := rand.New(rand.NewPCG(22, 3))
	ids := map[string][16]byte{} // the topics that exist, by name
	check := func(step string) {
		t.Helper()
		req := kmsg.NewPtrMetadataRequest() // null Topics: all of them
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("%s: metadata: %v", step, err)
		}
		var got []string
		for _, mt := range resp.Topics {
			if mt.Topic == nil || mt.ErrorCode != 0 {
				t.Fatalf("%s: topic entry %v answered %v", step, mt.Topic, kerr.ErrorForCode(mt.ErrorCode))
			}
			got = append(got, *mt.Topic)
			if id, ok := ids[*mt.Topic]; !ok || mt.TopicID != id {
				t.Fatalf("%s: topic %s has ID %x, want %x (known: %t)", step, *mt.Topic, mt.TopicID, id, ok)
			}
		}
		want := slices.Sorted(func(yield func(string) bool) {
			for name := range ids {
				if !yield(name) {
					return
				}
			}
		})
		if !slices.Equal(got, want) {
			t.Fatalf("%s: all topics listed as %v, want %v", step, got, want)
		}
	}
	check("empty")
	names := make([]string, 60)
	for i := range names {
		names[i] = fmt.Sprintf("order-%02d", i)
	}
	for round := range 6 {
		rng.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
		var create, del []string
		for _, n := range names[:20] {
			if _, ok := ids[n]; ok {
				del = append(del, n)
			} else {
				create = append(create, n)
			}
		}
		if len(del) > 0 {
			resps, err := adm.DeleteTopics(ctx, del...)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range resps {
				if r.Err != nil {
					t.Fatalf("delete %s: %v", r.Topic, r.Err)
				}
				delete(ids, r.Topic)
			}
			check(fmt.Sprintf("round %d, after deleting %v", round, del))
		}
		// Created again at once: a name deleted above may come back as a
		// new topic with a new ID.
		create = append(create, del[:len(del)/2]...)
		resps, err := adm.CreateTopics(ctx, 1, -1, nil, create...)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range resps {
			if r.Err != nil {
				t.Fatalf("create %s: %v", r.Topic, r.Err)
			}
			ids[r.Topic] = r.ID
		}
		check(fmt.Sprintf("round %d, after creating %v", round, create))
	}
}
