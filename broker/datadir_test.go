package broker_test

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/broker"
	"github.com/sharebroker/sharebroker/internal/testbroker"
)

// rawRecords is a partition's whole log as Fetch sends it.
func (c *rawConn) rawRecords(topic string, partition int32) []byte {
	c.t.Helper()
	resp := c.request(fetchReq(topic, partition, 0)).(*kmsg.FetchResponse)
	return resp.Topics[0].Partitions[0].RecordBatches
}

// same-bytes, producer-ids-reserved: a broker on the same data directory
// serves the same batches byte for byte, with the topic's ID and configs,
// and hands out producer IDs no earlier broker did.
func TestDataDirRestart(t *testing.T) {
	dir := t.TempDir()
	b1 := testbroker.Start(t, broker.Config{DataDir: dir})
	c := dialRaw(t, b1.Addr().String())
	c.createTopics("kept")
	pid, _ := c.initProducerID(-1, -1)
	for i := range 3 {
		if p := c.produce("kept", 0, idemBatch(pid, 0, int32(2*i), 2).Build()); p.ErrorCode != 0 {
			t.Fatalf("produce %d: code %d", i, p.ErrorCode)
		}
	}
	want := c.rawRecords("kept", 0)
	meta := c.request(&kmsg.MetadataRequest{Version: 12, Topics: []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("kept")}}}).(*kmsg.MetadataResponse)
	if err := testbroker.Close(b1); err != nil {
		t.Fatal(err)
	}

	b2 := testbroker.Start(t, broker.Config{DataDir: dir})
	c2 := dialRaw(t, b2.Addr().String())
	if got := c2.rawRecords("kept", 0); !bytes.Equal(got, want) {
		t.Fatalf("after restart %d bytes, want the same %d byte for byte", len(got), len(want))
	}
	meta2 := c2.request(&kmsg.MetadataRequest{Version: 12, Topics: []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("kept")}}}).(*kmsg.MetadataResponse)
	if meta2.Topics[0].TopicID != meta.Topics[0].TopicID {
		t.Errorf("topic ID %x after restart, was %x", meta2.Topics[0].TopicID, meta.Topics[0].TopicID)
	}
	// producer-state-from-log: the last batch retried is a duplicate.
	if p := c2.produce("kept", 0, idemBatch(pid, 0, 4, 2).Build()); p.ErrorCode != 0 || p.BaseOffset != 4 {
		t.Errorf("retry after restart: code %d offset %d, want the original offset 4", p.ErrorCode, p.BaseOffset)
	}
	if pid2, _ := c2.initProducerID(-1, -1); pid2 <= pid {
		t.Errorf("producer ID %d after restart; %d was handed out before", pid2, pid)
	}
}

// ready-after-recovery: /readyz is 503 while the data directory is read.
func TestDataDirReadyAfterRecovery(t *testing.T) {
	b, err := broker.New(broker.Config{Listen: "127.0.0.1:0", HTTP: "127.0.0.1:0", DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	status := 0
	broker.SetBeforeRecover(b, func() {
		resp, err := http.Get(fmt.Sprintf("http://%s/readyz", b.HTTPAddr()))
		if err != nil {
			t.Error(err)
			return
		}
		resp.Body.Close()
		status = resp.StatusCode
	})
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { testbroker.Close(b) })
	if status != http.StatusServiceUnavailable {
		t.Errorf("/readyz during recovery: %d, want 503", status)
	}
	resp, err := http.Get(fmt.Sprintf("http://%s/readyz", b.HTTPAddr()))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/readyz after Start: %d, want 200", resp.StatusCode)
	}
}

// one-data-dir, data-dir-one-node, lock-dir: configuration mistakes fail
// naming what is wrong.
func TestDataDirConfigErrors(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]struct {
		cfg  broker.Config
		want string
	}{
		"two log.dirs":     {broker.Config{Props: map[string]string{"log.dirs": dir + "," + dir + "2"}}, "log.dirs"},
		"disagreeing dirs": {broker.Config{DataDir: dir, Props: map[string]string{"log.dirs": dir + "2"}}, "set twice"},
		"nodes":            {broker.Config{DataDir: dir, Nodes: 2}, "single node"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := broker.New(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want an error naming %s", err, tc.want)
			}
		})
	}
	testbroker.Start(t, broker.Config{Props: map[string]string{"log.dirs": dir}})
	b, err := broker.New(broker.Config{Listen: "127.0.0.1:0", DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err == nil || !strings.Contains(err.Error(), dir) {
		t.Fatalf("second broker on %s: %v, want an error naming it", dir, err)
	}
	testbroker.Close(b)
}
