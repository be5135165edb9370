package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/faults"
)

func TestFaultMatching(t *testing.T) {
	var fs faults.Store
	key := int16(0)
	f, err := newFault(faults.Spec{APIKey: &key, Count: 2, ErrorCode: 6, Topic: "t"})
	if err != nil {
		t.Fatal(err)
	}
	fs.Add(f)
	produce := func(topic string) *request {
		req := kmsg.NewPtrProduceRequest()
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		req.Topics = append(req.Topics, rt)
		r := &request{body: req}
		r.header.APIKey = 0
		return r
	}
	if got := takeFault(&fs, produce("other"), nil); got != nil {
		t.Fatalf("fault for topic t took a produce to other: %+v", got)
	}
	for i := range 2 {
		if got := takeFault(&fs, produce("t"), nil); got == nil || got.ErrorCode != 6 {
			t.Fatalf("take %d: %+v", i, got)
		}
	}
	if got := takeFault(&fs, produce("t"), nil); got != nil || len(fs.Snapshot()) != 0 {
		t.Fatalf("fault outlived its count: %+v, armed %+v", got, fs.Snapshot())
	}
}

func TestNewFaultRejects(t *testing.T) {
	key, unknown := int16(0), int16(120)
	for name, in := range map[string]faults.Spec{
		"no key":        {ErrorCode: 6},
		"unknown key":   {APIKey: &unknown, ErrorCode: 6},
		"no kind":       {APIKey: &key},
		"two kinds":     {APIKey: &key, ErrorCode: 6, Drop: true},
		"bad latency":   {APIKey: &key, Latency: "soon"},
		"long latency":  {APIKey: &key, Latency: "1h"},
		"negative":      {APIKey: &key, Latency: "-1s"},
		"count too low": {APIKey: &key, Count: -1, Drop: true},
	} {
		if _, err := newFault(in); err == nil {
			t.Errorf("%s: accepted %+v", name, in)
		}
	}
}
