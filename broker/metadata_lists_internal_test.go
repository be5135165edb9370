package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestPartitionListsApart: the partition lists one Metadata answer takes
// from shared blocks have room for exactly what they were taken for and
// never overlap, so filling one to its length leaves every other as it
// was, small and large topics mixed, across block boundaries.
func TestPartitionListsApart(t *testing.T) {
	var lists partitionLists
	sizes := []int{1, 3, partitionListsBlock / 4, partitionListsBlock/4 + 1, 1, partitionListsBlock, 2, 0, 1}
	for range 6 {
		sizes = append(sizes, sizes...)
	}
	taken := make([][]kmsg.MetadataResponseTopicPartition, len(sizes))
	for i, n := range sizes {
		l := lists.take(n)
		if len(l) != 0 || cap(l) != n {
			t.Fatalf("list %d: len %d cap %d, want 0 and %d", i, len(l), cap(l), n)
		}
		for p := range n {
			l = append(l, kmsg.MetadataResponseTopicPartition{Partition: int32(p), LeaderEpoch: int32(i)})
		}
		taken[i] = l
	}
	for i, l := range taken {
		for p, e := range l {
			if e.Partition != int32(p) || e.LeaderEpoch != int32(i) {
				t.Fatalf("list %d, entry %d: partition %d of list %d; another list wrote over it", i, p, e.Partition, e.LeaderEpoch)
			}
		}
	}
}
