package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Rule: dlq-topic-rules (share-groups.md §10; Kafka's
// ShareGroupDLQValidator.validateDlqTopicConfig, apache/kafka#23360, and
// the 4.4 rule that a topic the dead-letter path did not create must opt in
// itself): a topic that exists is written to only if it carries
// errors.deadletterqueue.group.enable=true, even when the broker would
// create a missing one; and the name must carry the cluster's prefix. Each
// refusal is counted and nothing is written; the archive stands.
func TestDeadLetterTopicRules(t *testing.T) {
	reject := func(e *dlqEnv) {
		e.produce("r0")
		c1, _ := e.consumer()
		one(t, e.poll(c1), "r0", 1).Ack(kgo.AckReject)
		e.flush(c1)
	}
	refused := func(e *dlqEnv, topic string) {
		t.Helper()
		if got := e.metric("sharebroker_share_dead_letter_records_dropped_total", "cause", "topic_refused"); got != 1 {
			t.Fatalf("dropped %v, want 1", got)
		}
		ends, err := kadm.NewClient(e.admin).ListEndOffsets(e.ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		ends.Each(func(o kadm.ListedOffset) {
			if o.Offset != 0 {
				t.Fatalf("%s-%d holds %d records; want none written", o.Topic, o.Partition, o.Offset)
			}
		})
	}
	t.Run("existing topic not opted in, auto-create on", func(t *testing.T) {
		// A topic made by anyone but the dead-letter path (here a plain
		// CreateTopics, as a client's auto-creation would) has the
		// default false; that the broker may create missing dead-letter
		// topics does not opt this one in.
		e := newDLQEnv(t, map[string]string{"errors.deadletterqueue.auto.create.topics.enable": "true"}, true,
			"errors.deadletterqueue.topic.name", dlqTopic)
		if _, err := kadm.NewClient(e.admin).CreateTopic(e.ctx, 1, 1, nil, dlqTopic); err != nil {
			t.Fatal(err)
		}
		reject(e)
		refused(e, dlqTopic)
	})
	t.Run("opted in without the prefix", func(t *testing.T) {
		const other = "deadletters"
		e := newDLQEnv(t, nil, true, "errors.deadletterqueue.topic.name", other)
		enable := "true"
		if _, err := kadm.NewClient(e.admin).CreateTopic(e.ctx, 1, 1,
			map[string]*string{"errors.deadletterqueue.group.enable": &enable}, other); err != nil {
			t.Fatal(err)
		}
		reject(e)
		refused(e, other)
	})
	t.Run("opted in without the prefix, prefix emptied", func(t *testing.T) {
		const other = "deadletters"
		e := newDLQEnv(t, map[string]string{"errors.deadletterqueue.topic.name.prefix": ""}, true,
			"errors.deadletterqueue.topic.name", other)
		enable := "true"
		if _, err := kadm.NewClient(e.admin).CreateTopic(e.ctx, 1, 1,
			map[string]*string{"errors.deadletterqueue.group.enable": &enable}, other); err != nil {
			t.Fatal(err)
		}
		reject(e)
		ends, err := kadm.NewClient(e.admin).ListEndOffsets(e.ctx, other)
		if err != nil {
			t.Fatal(err)
		}
		if o, _ := ends.Lookup(other, 0); o.Offset != 1 {
			t.Fatalf("%s holds %d records, want the one dead letter", other, o.Offset)
		}
	})
}
