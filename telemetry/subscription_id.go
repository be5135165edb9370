package telemetry

import (
	"encoding/binary"
	"hash/crc32"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// subscriptionID computes a subscription ID as Kafka's
// ClientMetricsManager.computeSubscriptionId does (telemetry-subscription-id): the
// CRC32C of the metric set as Java prints it ("[a, b]") followed by the
// push interval in milliseconds, XORed with the Java hash of the instance
// ID (Uuid.hashCode). metrics must already be in the set's iteration order.
func subscriptionID(metrics []string, interval time.Duration, id [16]byte) int32 {
	text := "[" + strings.Join(metrics, ", ") + "]" + strconv.FormatInt(interval.Milliseconds(), 10)
	crc := int32(crc32.Checksum([]byte(text), castagnoli))
	hilo := binary.BigEndian.Uint64(id[:8]) ^ binary.BigEndian.Uint64(id[8:])
	return crc ^ (int32(hilo>>32) ^ int32(hilo))
}

// javaHashSetOrder returns items (distinct) in the order a java.util.HashSet
// filled with them in this order iterates: by bucket of the spread String
// hash in a table sized as HashMap sizes it, and in insertion order within
// a bucket. (A bucket of eight or more, which Java turns into a tree, is not
// modelled; a subscription's handful of metric prefixes never makes one.)
func javaHashSetOrder(items []string) []string {
	if len(items) < 2 {
		return items
	}
	capacity := 16
	for len(items) > capacity*3/4 {
		capacity *= 2
	}
	bucket := func(s string) uint32 {
		h := uint32(javaStringHash(s))
		return (h ^ h>>16) & uint32(capacity-1)
	}
	out := slices.Clone(items)
	slices.SortStableFunc(out, func(a, b string) int { return int(bucket(a)) - int(bucket(b)) })
	return out
}

// javaStringHash is Java's String.hashCode over UTF-16 code units.
func javaStringHash(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}
