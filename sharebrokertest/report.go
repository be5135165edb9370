package sharebrokertest

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sharebroker/sharebroker/httpapi"
)

// The failure report (docs/share-groups.md story-in-failures): when a test
// using Start fails, its log gets the share groups' state and the latest
// record stories as text, so a CI log answers "what happened to offset 42"
// without a browser. Every list is bounded, so a broker with a large window
// still prints a short report.

// Bounds of the failure report.
const (
	reportGroups     = 16 // share groups, by ID
	reportPartitions = 32 // share partitions per group, in topic and partition order
	reportRanges     = 20 // in-flight ranges per share partition
	reportOffsets    = 20 // record stories per share partition: the offsets whose stories changed last
	reportEvents     = 20 // events per record story: the newest
)

// WithoutFailureReport keeps Start from logging the share groups' state and
// record stories when the test fails.
func WithoutFailureReport() Option { return func(s *settings) { s.noReport = true } }

// Report returns the share groups' state and latest record stories as
// text: each share group's members and, per share partition, SPSO, SPEO,
// lag, the in-flight ranges (at most 20) and the stories of the 20 offsets
// whose stories changed last (at most 20 events each, the newest), for at
// most 16 groups of 32 share partitions. Start logs it when the test
// fails.
func (b *Broker) Report() string {
	s := b.b.InspectState()
	var sb strings.Builder
	fmt.Fprintf(&sb, "sharebroker share groups at %s (broker clock)\n", stamp(s.Clock().Now()))
	ids := append(s.ShareGroupIDs(), b.b.ShareStateGroups()...)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	if len(ids) == 0 {
		sb.WriteString("  no share groups\n")
	}
	for i, id := range ids {
		if i == reportGroups {
			fmt.Fprintf(&sb, "... %d more share groups\n", len(ids)-i)
			break
		}
		g, ok := httpapi.ShareGroup(s, id)
		if !ok {
			continue
		}
		reportGroup(&sb, s, id, g)
	}
	return sb.String()
}

func reportGroup(sb *strings.Builder, s httpapi.State, id string, g httpapi.ShareGroupJSON) {
	fmt.Fprintf(sb, "share group %q", id)
	if gj := g.Group; gj != nil {
		fmt.Fprintf(sb, " %s, epoch %d, %d members\n", gj.State, gj.GroupEpoch, len(gj.Members))
		for _, m := range gj.Members {
			var parts []string
			for _, a := range m.Assignment {
				parts = append(parts, fmt.Sprintf("%s%v", a.Topic, a.Partitions))
			}
			fmt.Fprintf(sb, "  member %s (client %s): %s\n", m.MemberID, m.ClientID, strings.Join(parts, " "))
		}
	} else {
		sb.WriteString(" (no members: share state only)\n")
	}
	for i, p := range g.Partitions {
		if i == reportPartitions {
			fmt.Fprintf(sb, "  ... %d more share partitions\n", len(g.Partitions)-i)
			break
		}
		fmt.Fprintf(sb, "  %s-%d on node %d: SPSO %d, SPEO %d, %d in flight, lag %d, next fetch %d\n",
			p.Topic, p.Partition, p.Leader, p.SPSO, p.SPEO, p.InFlightRecords, p.Lag, p.NextFetchOffset)
		for i, r := range p.Ranges {
			if i == reportRanges {
				fmt.Fprintf(sb, "    ... %d more ranges\n", len(p.Ranges)-i)
				break
			}
			fmt.Fprintf(sb, "    %d-%d %s d%d", r.FirstOffset, r.LastOffset, r.State, r.DeliveryCount)
			if r.Owner != "" {
				fmt.Fprintf(sb, " owner %s", r.Owner)
			}
			if r.LockDeadline != "" {
				fmt.Fprintf(sb, " lock until %s", r.LockDeadline)
			}
			sb.WriteString("\n")
		}
		reportStories(sb, s, id, p)
	}
}

// reportStories prints the stories of the offsets whose stories changed
// last, in offset order.
func reportStories(sb *strings.Builder, s httpapi.State, id string, p httpapi.SharePartitionJSON) {
	sp, _ := s.ShareStory(id, p.Topic, p.Partition)
	if sp == nil {
		return
	}
	offsets := sp.RecentOffsets(reportOffsets)
	slices.Sort(offsets)
	for _, o := range offsets {
		st, err := httpapi.RecordStory(s, id, p.Topic, p.Partition, o)
		if err != nil {
			continue
		}
		fmt.Fprintf(sb, "    offset %d", o)
		if st.Truncated {
			sb.WriteString(" (older events dropped)")
		}
		sb.WriteString(":\n")
		events := st.Events
		if n := len(events); n > reportEvents {
			fmt.Fprintf(sb, "      ... %d earlier events\n", n-reportEvents)
			events = events[n-reportEvents:]
		}
		for _, e := range events {
			fmt.Fprintf(sb, "      %s %s [%d-%d]%s\n", e.Time, e.Event, e.FirstOffset, e.LastOffset, eventDetail(e))
		}
	}
}

func eventDetail(e httpapi.StoryEventJSON) string {
	var sb strings.Builder
	if e.Member != "" {
		fmt.Fprintf(&sb, " member %s", e.Member)
	}
	if e.DeliveryCount != 0 {
		fmt.Fprintf(&sb, " delivery %d", e.DeliveryCount)
	}
	if e.LockDeadline != "" {
		fmt.Fprintf(&sb, " lock until %s", e.LockDeadline)
	}
	if e.Type != "" {
		fmt.Fprintf(&sb, " %s", e.Type)
	}
	if e.Reason != "" {
		fmt.Fprintf(&sb, " (%s)", e.Reason)
	}
	if e.DLQTopic != "" {
		fmt.Fprintf(&sb, " to %s-%d at offset %d", e.DLQTopic, *e.DLQPartition, *e.DLQOffset)
	}
	return sb.String()
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
