package main

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

const standardAuthorizer = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

// acls-kept: ACLs created and deleted just before a SIGKILL are there, and
// decide requests, when the broker starts again on the directory. The
// first start makes User:ANONYMOUS (the PLAINTEXT principal) a super user
// to set things up; the second has no super user, so only the kept ACLs
// allow anything.
func TestDataDirACLsSurviveSIGKILL(t *testing.T) {
	dir := t.TempDir()
	authz := []string{"--config", "authorizer.class.name=" + standardAuthorizer}
	p := startDataDir(t, dir, append(authz, "--config", "super.users=User:ANONYMOUS")...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin := func(addr string) *kadm.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RetryTimeout(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return kadm.NewClient(cl)
	}
	adm := admin(p.addr)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "granted"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "revoked"); err != nil {
		t.Fatal(err)
	}
	created, err := adm.CreateACLs(ctx, kadm.NewACLs().Allow("User:ANONYMOUS").AllowHosts().
		Topics("granted", "revoked").Clusters().Operations(kadm.OpWrite, kadm.OpDescribe))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range created {
		if c.Err != nil {
			t.Fatalf("creating %+v: %v", c, c.Err)
		}
	}
	deleted, err := adm.DeleteACLs(ctx, kadm.NewACLs().Allow("User:ANONYMOUS").AllowHosts().
		Topics("revoked").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral))
	if err != nil || len(deleted) != 1 || len(deleted[0].Deleted) != 1 {
		t.Fatalf("deleting: %v %+v", err, deleted)
	}
	p.kill(t)

	p2 := startDataDir(t, dir, authz...)
	described, err := admin(p2.addr).DescribeACLs(ctx, kadm.NewACLs().AnyResource().
		ResourcePatternType(kadm.ACLPatternAny).Allow().Deny().AllowHosts().DenyHosts().Operations(kadm.OpAny))
	if err != nil || len(described) != 1 || described[0].Err != nil {
		t.Fatalf("describing after SIGKILL: %v %+v", err, described)
	}
	var got []string
	for _, d := range described[0].Described {
		got = append(got, d.Type.String()+":"+d.Name+":"+d.Operation.String())
	}
	slices.Sort(got)
	want := []string{"CLUSTER:kafka-cluster:DESCRIBE", "CLUSTER:kafka-cluster:WRITE",
		"TOPIC:granted:DESCRIBE", "TOPIC:granted:WRITE", "TOPIC:revoked:DESCRIBE"}
	if !slices.Equal(got, want) {
		t.Fatalf("after SIGKILL DescribeAcls lists %v, want %v", got, want)
	}
	produce := func(topic string) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(p2.addr), kgo.DefaultProduceTopic(topic), kgo.DisableIdempotentWrite())
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		return cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr()
	}
	if err := produce("granted"); err != nil {
		t.Fatalf("producing with the kept WRITE: %v", err)
	}
	if err := produce("revoked"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("producing after WRITE was deleted and SIGKILL: %v", err)
	}
}
