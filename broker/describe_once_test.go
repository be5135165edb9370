package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/broker"
)

// TestDescribeEachOnce checks describe-each-once (issue 21's review of the
// counts a request carries): describe requests that repeat one entry 5,000
// times, each repetition of which Kafka would answer with the whole state
// it names (a 100-partition topic, the broker's configs with their
// documentation, a group's 100 committed offsets), are answered once per
// distinct entry, so no answer is more than 4 times the request's bytes.
// Before the rule Metadata answered 138 times its request, DescribeConfigs
// 2,839 times, OffsetFetch 225 times. The ones not deduplicated
// (DescribeProducers, ListOffsets) answer each entry in a few bytes and
// are held to the same bound.
func TestDescribeEachOnce(t *testing.T) {
	_, addr := startBroker(t, broker.Config{})
	ctx, cl, adm := newAdmin(t, addr)
	mustCreate(t, ctx, adm, "t", 100, nil)
	offs := kadm.Offsets{}
	for p := range int32(100) {
		offs.Add(kadm.Offset{Topic: "t", Partition: p, At: 0})
	}
	if _, err := adm.CommitOffsets(ctx, "g", offs); err != nil {
		t.Fatal(err)
	}
	const n = 5000
	size := func(r kmsg.Request, v int16) int {
		r.SetVersion(v)
		return len(r.AppendTo(nil))
	}
	rsize := func(r kmsg.Response) int { return len(r.AppendTo(nil)) }
	check := func(name string, req kmsg.Request) {
		resp, err := cl.Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		v := resp.GetVersion()
		in, out := size(req, v), rsize(resp)
		t.Logf("%-28s request %6d B, answer %6d B", name, in, out)
		if out > 4*in {
			t.Errorf("%s: a %d-byte request with 5,000 repeats answered %d bytes, over 4 times its size", name, in, out)
		}
	}
	{
		r := kmsg.NewPtrMetadataRequest()
		for range n {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr("t")
			r.Topics = append(r.Topics, rt)
		}
		check("Metadata", r)
		resp, err := r.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 || len(resp.Topics[0].Partitions) != 100 {
			t.Fatalf("Metadata naming t 5,000 times: %d topics answered, want t once with its 100 partitions", len(resp.Topics))
		}
	}
	{
		r := kmsg.NewPtrDescribeConfigsRequest()
		r.IncludeSynonyms, r.IncludeDocumentation = true, true
		for range n {
			rr := kmsg.NewDescribeConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, "0"
			r.Resources = append(r.Resources, rr)
		}
		check("DescribeConfigs broker", r)
	}
	{
		r := kmsg.NewPtrOffsetFetchRequest()
		for range n {
			g := kmsg.NewOffsetFetchRequestGroup()
			g.Group = "g"
			r.Groups = append(r.Groups, g)
		}
		check("OffsetFetch", r)
	}
	{
		r := kmsg.NewPtrDescribeGroupsRequest()
		for range n {
			r.Groups = append(r.Groups, "g")
		}
		check("DescribeGroups", r)
	}
	{
		r := kmsg.NewPtrDescribeProducersRequest()
		rt := kmsg.NewDescribeProducersRequestTopic()
		rt.Topic = "t"
		for range n {
			rt.Partitions = append(rt.Partitions, 0)
		}
		r.Topics = append(r.Topics, rt)
		check("DescribeProducers", r)
	}
	{
		r := kmsg.NewPtrListOffsetsRequest()
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "t"
		for range n {
			p := kmsg.NewListOffsetsRequestTopicPartition()
			rt.Partitions = append(rt.Partitions, p)
		}
		r.Topics = append(r.Topics, rt)
		check("ListOffsets", r)
	}
	{
		r := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		for range n {
			g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
			g.GroupID = "g"
			r.Groups = append(r.Groups, g)
		}
		check("DescribeShareGroupOffsets", r)
	}
	{
		r := kmsg.NewPtrConsumerGroupDescribeRequest()
		for range n {
			r.Groups = append(r.Groups, "g")
		}
		check("ConsumerGroupDescribe", r)
	}
	{
		r := kmsg.NewPtrShareGroupDescribeRequest()
		for range n {
			r.GroupIDs = append(r.GroupIDs, "g")
		}
		check("ShareGroupDescribe", r)
	}
	{
		r := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
		for range n {
			u := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
			u.Name = "u"
			r.Users = append(r.Users, u)
		}
		check("DescribeUserScramCredentials", r)
	}
	{
		r := kmsg.NewPtrDescribeTransactionsRequest()
		for range n {
			r.TransactionalIDs = append(r.TransactionalIDs, "x")
		}
		check("DescribeTransactions", r)
	}
}
