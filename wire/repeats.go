package wire

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// DropRepeatedEntries removes, from the describe requests whose answer to
// one entry is as large as the state it describes (all a topic's
// partitions, all a resource's configs, all a group's members or
// offsets), every entry that repeats an earlier one, so that each is
// answered once (docs/log.md describe-each-once). Without it a request of
// a few bytes per entry makes an answer of kilobytes per entry: Metadata
// naming a 100-partition topic 1,000 times answered 138 times its size,
// DescribeConfigs of the broker with documentation 2,839 times. Kafka's
// KafkaApis already answers Metadata's names and IDs as sets (and
// DeleteGroups' names, also taken here); its other describe APIs answer
// each repetition. Entries that list what they ask
// for (explicit topics or partitions) are answered in proportion to their
// own bytes and are kept. Other requests are left as they are.
func DropRepeatedEntries(req kmsg.Request) {
	switch r := req.(type) {
	case *kmsg.MetadataRequest:
		r.Topics = firstOfEach(r.Topics, func(t kmsg.MetadataRequestTopic) (string, bool) {
			switch {
			case t.Topic != nil:
				return "name\x00" + *t.Topic, true
			case t.TopicID != [16]byte{}:
				return "id\x00" + string(t.TopicID[:]), true
			}
			return "", false // neither: answered INVALID_REQUEST, a few bytes
		})
	case *kmsg.DescribeConfigsRequest:
		r.Resources = firstOfEach(r.Resources, func(c kmsg.DescribeConfigsRequestResource) (string, bool) {
			names := "\x01" // a null list asks for every config
			if c.ConfigNames != nil {
				names = strings.Join(c.ConfigNames, "\x00")
			}
			return string(rune(c.ResourceType)) + "\x00" + c.ResourceName + "\x00" + names, true
		})
	case *kmsg.DescribeGroupsRequest:
		r.Groups = firstOfEach(r.Groups, sameString)
	case *kmsg.ConsumerGroupDescribeRequest:
		r.Groups = firstOfEach(r.Groups, sameString)
	case *kmsg.ShareGroupDescribeRequest:
		r.GroupIDs = firstOfEach(r.GroupIDs, sameString)
	case *kmsg.DeleteGroupsRequest:
		r.Groups = firstOfEach(r.Groups, sameString) // Kafka's KafkaApis takes them distinct
	case *kmsg.DescribeTransactionsRequest:
		r.TransactionalIDs = firstOfEach(r.TransactionalIDs, sameString)
	case *kmsg.OffsetFetchRequest:
		r.Groups = firstOfEach(r.Groups, func(g kmsg.OffsetFetchRequestGroup) (string, bool) {
			return g.Group, g.Topics == nil // a null list asks for all its offsets
		})
	case *kmsg.DescribeShareGroupOffsetsRequest:
		r.Groups = firstOfEach(r.Groups, func(g kmsg.DescribeShareGroupOffsetsRequestGroup) (string, bool) {
			return g.GroupID, g.Topics == nil
		})
	}
}

func sameString(s string) (string, bool) { return s, true }

// firstOfEach keeps, in order, each entry whose key has not been seen
// before; an entry key does not apply to (ok false) is always kept. A
// list without repeats is returned as it is.
func firstOfEach[T any](entries []T, key func(T) (string, bool)) []T {
	if len(entries) < 2 {
		return entries // nothing to repeat: the common request costs no map or key
	}
	seen := make(map[string]struct{}, len(entries))
	repeated := false
	for _, e := range entries {
		k, ok := key(e)
		if !ok {
			continue
		}
		if _, dup := seen[k]; dup {
			repeated = true
			break
		}
		seen[k] = struct{}{}
	}
	if !repeated {
		return entries
	}
	clear(seen)
	kept := entries[:0]
	for _, e := range entries {
		if k, ok := key(e); ok {
			if _, dup := seen[k]; dup {
				continue
			}
			seen[k] = struct{}{}
		}
		kept = append(kept, e)
	}
	return kept
}
