package wire_test

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/wire"
)

// describe-each-once: a repeated Metadata name or ID goes, in request
// order; an entry naming neither is kept every time (each answers
// INVALID_REQUEST in a few bytes); OffsetFetch drops a repeated group only
// when it asks for all offsets.
func TestDropRepeatedEntries(t *testing.T) {
	named := func(s string) kmsg.MetadataRequestTopic {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(s)
		return rt
	}
	byID := kmsg.NewMetadataRequestTopic()
	byID.TopicID = [16]byte{1}
	neither := kmsg.NewMetadataRequestTopic()
	md := kmsg.NewPtrMetadataRequest()
	md.Topics = []kmsg.MetadataRequestTopic{named("a"), named("b"), named("a"), byID, neither, byID, neither, named("b")}
	wire.DropRepeatedEntries(md)
	var got []string
	for _, rt := range md.Topics {
		switch {
		case rt.Topic != nil:
			got = append(got, *rt.Topic)
		case rt.TopicID != [16]byte{}:
			got = append(got, "id")
		default:
			got = append(got, "neither")
		}
	}
	if want := []string{"a", "b", "id", "neither", "neither"}; !slices.Equal(got, want) {
		t.Fatalf("Metadata topics %v, want %v", got, want)
	}

	of := kmsg.NewPtrOffsetFetchRequest()
	all := kmsg.NewOffsetFetchRequestGroup()
	all.Group = "g"
	some := all
	some.Topics = []kmsg.OffsetFetchRequestGroupTopic{kmsg.NewOffsetFetchRequestGroupTopic()}
	of.Groups = []kmsg.OffsetFetchRequestGroup{all, some, all, some}
	wire.DropRepeatedEntries(of)
	if len(of.Groups) != 3 || of.Groups[0].Topics != nil || of.Groups[1].Topics == nil || of.Groups[2].Topics == nil {
		t.Fatalf("OffsetFetch groups %+v, want all, some, some", of.Groups)
	}
}
