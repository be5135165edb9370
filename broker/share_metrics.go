package broker

import "github.com/sharebroker/sharebroker/shareserve"

// What a share request counts in the per-topic share metrics: shareserve
// returns the outcomes, each topic once per request and only while the
// topic exists; the broker adds them to the node's counters (the metrics
// package, ShareFetchRequest and ShareAckRequest).

// countShareFetch adds what one ShareFetch counted (shareserve.FetchResult):
// its acknowledgements and acquisitions per topic, and an expired wait.
func (b *Broker) countShareFetch(node int32, res shareserve.FetchResult) {
	b.countShareAcks(node, res.Acks)
	for _, o := range res.Fetches {
		b.metrics.ShareFetchRequest(node, o.TopicID, o.Failed)
	}
	if res.Expired {
		if w := b.metrics.WaitsOf(node); w != nil {
			w.Expired()
		}
	}
}

// countShareAcks adds the acknowledgement outcomes of one request, one per
// topic shareserve counted.
func (b *Broker) countShareAcks(node int32, acks []shareserve.TopicOutcome) {
	for _, o := range acks {
		b.metrics.ShareAckRequest(node, o.TopicID, o.Failed)
	}
}
