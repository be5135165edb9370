package httpapi

// POST /v1/test/produce (--enable-test-api): one record into one
// partition, for the console's produce action and for scripts that want a
// record without a Kafka client.

import (
	"errors"
	"net/http"

	"github.com/sharebroker/sharebroker/cluster"
	"github.com/sharebroker/sharebroker/storage"
)

// Producer appends records for the test API.
type Producer interface {
	// Produce appends rec to partition of topic as a produce request
	// from a client without a producer ID would, with the topic's
	// max.message.bytes and timestamp type, and returns its offset.
	// Errors: cluster.ErrUnknownPartition for a topic or partition that
	// does not exist; storage's sentinels for a record refused.
	Produce(topic string, partition int32, rec storage.Record) (int64, error)
}

// ProduceJSON is the body of POST /v1/test/produce. Key, Value and
// header values are text; a missing key or value is null.
type ProduceJSON struct {
	Topic     *string             `json:"topic"`
	Partition *int32              `json:"partition"`
	Key       *string             `json:"key"`
	Value     *string             `json:"value"`
	Headers   []ProduceHeaderJSON `json:"headers"`
}

// ProduceHeaderJSON is one header of a produced record.
type ProduceHeaderJSON struct {
	Key   string  `json:"key"`
	Value *string `json:"value"`
}

// ProducedJSON is the answer: where the record landed.
type ProducedJSON struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

func bytesOf(s *string) []byte {
	if s == nil {
		return nil
	}
	return []byte(*s)
}

// serveProduce appends one record stamped with the broker clock: 200 and
// its offset; 400 for a bad body or a record the partition refuses, 404
// for an unknown topic or partition.
func (t testAPI) serveProduce(w http.ResponseWriter, r *http.Request) {
	const example = `{"topic":"t","partition":0,"key":"k","value":"v","headers":[{"key":"h","value":"x"}]}`
	var in ProduceJSON
	if !decodeBody(w, r, &in, example) {
		return
	}
	switch {
	case in.Topic == nil || in.Partition == nil:
		writeError(w, http.StatusBadRequest, "body: want %s: topic and partition are needed", example)
		return
	case *in.Partition < 0:
		writeError(w, http.StatusBadRequest, "partition %d: want a partition index, 0 or more", *in.Partition)
		return
	}
	rec := storage.Record{Timestamp: t.ctl.Clock().Now().UnixMilli(), Key: bytesOf(in.Key), Value: bytesOf(in.Value)}
	for _, h := range in.Headers {
		rec.Headers = append(rec.Headers, storage.Header{Key: h.Key, Value: bytesOf(h.Value)})
	}
	offset, err := t.ctl.Produce(*in.Topic, *in.Partition, rec)
	switch {
	case errors.Is(err, cluster.ErrUnknownPartition):
		writeError(w, http.StatusNotFound, "%v", err)
		return
	case err != nil:
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	t.log.Info("record produced by test API", "topic", *in.Topic, "partition", *in.Partition, "offset", offset)
	writeJSON(w, http.StatusOK, ProducedJSON{Topic: *in.Topic, Partition: *in.Partition, Offset: offset})
}
