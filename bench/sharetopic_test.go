package bench_test

import "github.com/twmb/franz-go/pkg/kgo"

// shareTopic is the topic a share benchmark preloads (preloadTopic) and
// consumes (consumeShareTopic). The zero value is the workload of
// BenchmarkShareConsume and BenchmarkShareServer: benchTopic with its
// benchPartitions partitions, flushed every preloadBatch records per
// partition, clients with the harness's options only.
type shareTopic struct {
	name       string    // created by preloadTopic; "" means benchTopic
	partitions int       // 0 means benchPartitions
	batch      int       // records per partition per preload flush; 0 means preloadBatch
	producer   []kgo.Opt // added to the preloading producer's options
	consumer   []kgo.Opt // added to every share consumer's options
}

func (t shareTopic) topic() string {
	if t.name == "" {
		return benchTopic
	}
	return t.name
}

func (t shareTopic) parts() int {
	if t.partitions == 0 {
		return benchPartitions
	}
	return t.partitions
}

func (t shareTopic) batchRecords() int {
	if t.batch == 0 {
		return preloadBatch
	}
	return t.batch
}
