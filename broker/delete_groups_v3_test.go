package broker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/broker"
)

// Rule: delete-groups-v3 (docs/groups.md; KIP-1331, Kafka 4.4): DeleteGroups
// v3 carries a message with each group's refusal and none with a group
// deleted. kadm negotiates v3 and hands the message on (ErrMessage); before
// this rule the broker served v0-v2 only and kadm saw no message.
func TestDeleteGroupsV3Messages(t *testing.T) {
	_, addr := startBroker(t, broker.Config{})
	c := dialRaw(t, addr)
	c.createTopics("t")

	// "busy" keeps a member; "idle" is emptied by its member leaving.
	for _, id := range []string{"busy", "idle"} {
		join := joinReq(9, id, "")
		join.MemberID = c.request(join).(*kmsg.JoinGroupResponse).MemberID
		jr := c.request(join).(*kmsg.JoinGroupResponse)
		code(t, "join "+id, jr.ErrorCode, nil)
		if id == "idle" {
			leave := kmsg.NewPtrLeaveGroupRequest()
			leave.SetVersion(3)
			leave.Group = id
			m := kmsg.NewLeaveGroupRequestMember()
			m.MemberID = jr.MemberID
			leave.Members = append(leave.Members, m)
			code(t, "leave", c.request(leave).(*kmsg.LeaveGroupResponse).ErrorCode, nil)
		}
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resps, err := kadm.NewClient(cl).DeleteGroups(ctx, "busy", "idle", "ghost")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		group string
		want  *kerr.Error
	}{{"busy", kerr.NonEmptyGroup}, {"idle", nil}, {"ghost", kerr.GroupIDNotFound}} {
		r := resps[tc.group]
		switch {
		case tc.want == nil && (r.Err != nil || r.ErrMessage != ""):
			t.Errorf("%s: %v %q, want deleted with no message", tc.group, r.Err, r.ErrMessage)
		case tc.want != nil && (!errors.Is(r.Err, tc.want) || r.ErrMessage == ""):
			t.Errorf("%s: %v %q, want %v with a message", tc.group, r.Err, r.ErrMessage, tc.want)
		}
	}

	// v2 has no message on the wire; the same refusal comes without one.
	req := kmsg.NewPtrDeleteGroupsRequest()
	req.SetVersion(2)
	req.Groups = []string{"busy"}
	g := c.request(req).(*kmsg.DeleteGroupsResponse).Groups[0]
	if g.ErrorCode != kerr.NonEmptyGroup.Code || g.ErrorMessage != nil {
		t.Fatalf("v2: %v %v, want NON_EMPTY_GROUP and no message", kerr.ErrorForCode(g.ErrorCode), g.ErrorMessage)
	}
}
