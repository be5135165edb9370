package broker_test

import (
	"bytes"
	"crypto/tls"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/broker"
	"github.com/sharebroker/sharebroker/internal/batchtest"
)

// fetchAll is a Fetch of partitions 0-2 of topic from offset, each up to
// partMax bytes.
func fetchAll(topic string, offset int64, partMax int32) *kmsg.FetchRequest {
	req := fetchReq(topic, 0, offset)
	req.MaxBytes = 1<<31 - 1
	req.Topics[0].Partitions[0].PartitionMaxBytes = partMax
	for p := int32(1); p < 3; p++ {
		rp := req.Topics[0].Partitions[0]
		rp.Partition = p
		req.Topics[0].Partitions = append(req.Topics[0].Partitions, rp)
	}
	return req
}

// fetch-from-files: a data-dir broker's Fetch answers carry the same record
// bytes as an in-memory broker's, over PLAINTEXT (written with sendfile)
// and over TLS (written in bounded pieces), for answers mixing partitions
// whose records are copied, pinned in the files, or both.
func TestFetchFromFilesSameBytes(t *testing.T) {
	props := func() map[string]string {
		return map[string]string{"num.partitions": "3", "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0"}
	}
	mem, _ := startBroker(t, broker.Config{Props: props()})
	disk, _ := startBroker(t, broker.Config{Props: props(), DataDir: t.TempDir(), HTTP: "127.0.0.1:0"})
	cm := dialRaw(t, mem.ListenerAddr("PLAINTEXT").String())
	cd := dialRaw(t, disk.ListenerAddr("PLAINTEXT").String())
	cm.createTopics("big")
	cd.createTopics("big")
	for i := range 30 {
		spec := batchtest.Plain(1 + i%2)
		spec.ValueBytes = []int{100, 20 << 10, 90 << 10}[i%3] // spans under and over 64 KiB
		batch := spec.Build()
		for _, c := range []*rawConn{cm, cd} {
			if p := c.produce("big", int32(i%3), batch); p.ErrorCode != 0 {
				t.Fatalf("produce %d: code %d", i, p.ErrorCode)
			}
		}
	}
	ct := dialRaw(t, disk.ListenerAddr("SSL").String())
	ct.NC = tls.Client(ct.NC, &tls.Config{RootCAs: fetchCA(t, disk), ServerName: "127.0.0.1"})
	for _, offset := range []int64{0, 3, 9} {
		for _, partMax := range []int32{1, 100 << 10, 1 << 20, 1<<31 - 1} {
			want := cm.request(fetchAll("big", offset, partMax)).(*kmsg.FetchResponse)
			for name, c := range map[string]*rawConn{"PLAINTEXT": cd, "SSL": ct} {
				got := c.request(fetchAll("big", offset, partMax)).(*kmsg.FetchResponse)
				for p := range 3 {
					w, g := want.Topics[0].Partitions[p], got.Topics[0].Partitions[p]
					if g.ErrorCode != w.ErrorCode || !bytes.Equal(g.RecordBatches, w.RecordBatches) {
						t.Fatalf("%s, offset %d, partition max %d, partition %d: code %d with %d record bytes, want code %d with the same %d bytes",
							name, offset, partMax, p, g.ErrorCode, len(g.RecordBatches), w.ErrorCode, len(w.RecordBatches))
					}
				}
			}
		}
	}
}
