package broker_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sharebroker/sharebroker/broker"
	"github.com/sharebroker/sharebroker/httpapi"
)

// ACL tests make principals with mutual TLS, the way a user would: an SSL
// listener with ssl.client.auth=required and a client CA; each client
// certificate's CN names its principal, User:CN=<name>. The super user is
// User:CN=admin.
const (
	standardAuthorizer = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
	adminPrincipal     = "User:CN=admin"
)

type aclBroker struct {
	b    *broker.Broker
	ssl  string
	pool *x509.CertPool
	ca   *testCA
	n    int64 // serials
}

// startACLBroker starts a broker with authorization on (unless props
// clears authorizer.class.name), User:CN=admin a super user, and the
// listeners of startSSLBroker.
func startACLBroker(t *testing.T, props map[string]string) *aclBroker {
	t.Helper()
	ca := newTestCA(t)
	all := map[string]string{
		"ssl.client.auth":       "required",
		"authorizer.class.name": standardAuthorizer,
		"super.users":           adminPrincipal,
	}
	for k, v := range props {
		all[k] = v
	}
	if all["authorizer.class.name"] == "" {
		delete(all, "authorizer.class.name")
	}
	b, _ := startSSLBroker(t, broker.TLSConfig{ClientCAFile: writeFile(t, "client-ca.pem", ca.pem)}, all)
	return &aclBroker{b: b, ssl: b.ListenerAddr("SSL").String(), pool: fetchCA(t, b), ca: ca, n: 100}
}

// client is a kgo client whose principal is User:CN=<cn>.
func (ab *aclBroker) client(t *testing.T, cn string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	ab.n++
	cert, _, _ := ab.ca.issue(t, ab.n, pkix.Name{CommonName: cn}, false)
	opts = append([]kgo.Opt{kgo.SeedBrokers(ab.ssl),
		kgo.DialTLSConfig(&tls.Config{RootCAs: ab.pool, ServerName: "127.0.0.1", Certificates: []tls.Certificate{cert}}),
		kgo.RetryTimeout(2 * time.Second)}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// admin is a kadm client of the super user.
func (ab *aclBroker) admin(t *testing.T) *kadm.Client {
	return kadm.NewClient(ab.client(t, "admin"))
}

// grant creates the ACLs b describes, as the super user, and fails the
// test on any error.
func (ab *aclBroker) grant(t *testing.T, b *kadm.ACLBuilder) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := ab.admin(t).CreateACLs(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("create ACL %+v: %v %s", r, r.Err, r.ErrMessage)
		}
	}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// getACLs reads GET /v1/acls.
func getACLs(t *testing.T, b *broker.Broker) (bool, []httpapi.ACLJSON) {
	t.Helper()
	resp, err := http.Get("http://" + b.HTTPAddr().String() + "/v1/acls")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Enabled bool              `json:"enabled"`
		ACLs    []httpapi.ACLJSON `json:"acls"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out.Enabled, out.ACLs
}

// Rules: acl-apis-need-cluster, acl-validation, acl-set, acl-filters,
// acls-http, denials-counted.
func TestACLAPIs(t *testing.T) {
	ab := startACLBroker(t, nil)
	ctx := testCtx(t)
	adm := ab.admin(t)

	// A principal without ALTER on CLUSTER cannot create, delete or
	// describe ACLs.
	alice := kadm.NewClient(ab.client(t, "alice"))
	res, err := alice.CreateACLs(ctx, kadm.NewACLs().Allow("User:CN=alice").AllowHosts().Topics("t").Operations(kadm.OpAll))
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(res[0].Err, kerr.ClusterAuthorizationFailed) || !strings.Contains(res[0].ErrMessage, "User:CN=alice") {
		t.Fatalf("alice creating an ACL: %v %q", res[0].Err, res[0].ErrMessage)
	}
	if d := describeAll(t, ab.client(t, "alice")); d.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("alice describing ACLs: %d", d.ErrorCode)
	}

	lit := kadm.NewACLs().Allow("User:CN=alice").AllowHosts().Topics("orders").Operations(kadm.OpRead, kadm.OpWrite)
	pre := kadm.NewACLs().Deny("User:*").DenyHosts("10.1.1.1").Topics("secret.").ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpAll)
	ab.grant(t, lit)
	ab.grant(t, pre)
	ab.grant(t, lit) // rule acl-set: no second copy

	// Rule acl-validation: each creation on its own.
	raw := kmsg.NewPtrCreateACLsRequest()
	for _, c := range []struct {
		rt        kmsg.ACLResourceType
		name      string
		principal string
	}{{kmsg.ACLResourceTypeCluster, "other", "User:x"}, {kmsg.ACLResourceTypeTopic, "", "User:x"},
		{kmsg.ACLResourceTypeTopic, "t", "nocolon"}, {kmsg.ACLResourceTypeGroup, "g", "User:x"}} {
		cr := kmsg.NewCreateACLsRequestCreation()
		cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = c.rt, c.name, kmsg.ACLResourcePatternTypeLiteral
		cr.Principal, cr.Host, cr.Operation, cr.PermissionType = c.principal, "*", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
		raw.Creations = append(raw.Creations, cr)
	}
	resp, err := raw.RequestWith(ctx, ab.client(t, "admin"))
	if err != nil {
		t.Fatal(err)
	}
	wantMsgs := []string{"The only valid name for the CLUSTER resource is kafka-cluster", "Invalid empty resource name",
		"Could not parse principal from `nocolon` (no colon is present separating the principal type from the principal name)", ""}
	for i, r := range resp.Results {
		var msg string
		if r.ErrorMessage != nil {
			msg = *r.ErrorMessage
		}
		wantCode := kerr.InvalidRequest.Code
		if wantMsgs[i] == "" {
			wantCode = 0
		}
		if r.ErrorCode != wantCode || msg != wantMsgs[i] {
			t.Errorf("creation %d: %d %q, want %d %q", i, r.ErrorCode, msg, wantCode, wantMsgs[i])
		}
	}

	// Rule acl-filters: MATCH selects what applies to a name.
	m := kmsg.NewPtrDescribeACLsRequest()
	m.ResourceType, m.ResourceName, m.ResourcePatternType = kmsg.ACLResourceTypeTopic, kmsg.StringPtr("secret.x"), kmsg.ACLResourcePatternTypeMatch
	m.Operation, m.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	mr, err := m.RequestWith(ctx, ab.client(t, "admin"))
	if err != nil {
		t.Fatal(err)
	}
	if len(mr.Resources) != 1 || mr.Resources[0].ResourceName != "secret." || len(mr.Resources[0].ACLs) != 1 || mr.Resources[0].ACLs[0].Host != "10.1.1.1" {
		t.Fatalf("MATCH secret.x: %+v", mr.Resources)
	}

	enabled, acls := getACLs(t, ab.b)
	want := []httpapi.ACLJSON{
		{ResourceType: "TOPIC", ResourceName: "orders", PatternType: "LITERAL", Principal: "User:CN=alice", Host: "*", Operation: "READ", PermissionType: "ALLOW"},
		{ResourceType: "TOPIC", ResourceName: "orders", PatternType: "LITERAL", Principal: "User:CN=alice", Host: "*", Operation: "WRITE", PermissionType: "ALLOW"},
		{ResourceType: "TOPIC", ResourceName: "secret.", PatternType: "PREFIXED", Principal: "User:*", Host: "10.1.1.1", Operation: "ALL", PermissionType: "DENY"},
		{ResourceType: "GROUP", ResourceName: "g", PatternType: "LITERAL", Principal: "User:x", Host: "*", Operation: "READ", PermissionType: "ALLOW"},
	}
	if !enabled || !slices.Equal(acls, want) {
		t.Fatalf("GET /v1/acls: %v %+v", enabled, acls)
	}

	deleted, err := adm.DeleteACLs(ctx, kadm.NewACLs().Allow("User:CN=alice").AllowHosts().Topics("orders").Operations(kadm.OpAny))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(deleted[0].Deleted); n != 2 || deleted[0].Err != nil {
		t.Fatalf("deleted %d (%v), want alice's two", n, deleted[0].Err)
	}
	if _, acls := getACLs(t, ab.b); len(acls) != 2 {
		t.Fatalf("after delete: %+v", acls)
	}
	// Rule denials-counted: alice's two refusals (create, describe).
	if got := denials(t, ab.b, "CLUSTER"); got != 2 {
		t.Fatalf("CLUSTER denials %v, want 2", got)
	}
}

// describeAll sends DescribeAcls with a filter selecting every ACL.
func describeAll(t *testing.T, cl *kgo.Client) *kmsg.DescribeACLsResponse {
	t.Helper()
	d := kmsg.NewPtrDescribeACLsRequest()
	d.ResourceType, d.ResourcePatternType, d.Operation, d.PermissionType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	dr, err := d.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	return dr
}

// denials reads sharebroker_authorization_denials_total for one resource
// type on node 0.
func denials(t *testing.T, b *broker.Broker, resourceType string) float64 {
	t.Helper()
	return metricValue(t, scrape(t, "http://"+b.HTTPAddr().String()), "sharebroker_authorization_denials_total",
		map[string]string{"resource_type": resourceType, "node": "0"})
}

// Rule acl-off.
func TestACLAPIsWithoutAuthorizer(t *testing.T) {
	b, addr := startBroker(t, broker.Config{Listen: "127.0.0.1:0", HTTP: "127.0.0.1:0"})
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := testCtx(t)
	adm := kadm.NewClient(cl)
	res, err := adm.CreateACLs(ctx, kadm.NewACLs().Allow("User:a").AllowHosts().Topics("t").Operations(kadm.OpRead))
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(res[0].Err, kerr.SecurityDisabled) || res[0].ErrMessage != "No Authorizer is configured." {
		t.Fatalf("create: %v %q", res[0].Err, res[0].ErrMessage)
	}
	if dr := describeAll(t, cl); dr.ErrorCode != kerr.SecurityDisabled.Code || dr.ErrorMessage == nil || *dr.ErrorMessage != "No Authorizer is configured on the broker" {
		t.Fatalf("describe: %d %v", dr.ErrorCode, dr.ErrorMessage)
	}
	del, err := adm.DeleteACLs(ctx, kadm.NewACLs().Allow("User:a").AllowHosts().Topics("t").Operations(kadm.OpRead))
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(del[0].Err, kerr.SecurityDisabled) {
		t.Fatalf("delete: %v", del[0].Err)
	}
	if enabled, acls := getACLs(t, b); enabled || len(acls) != 0 {
		t.Fatalf("GET /v1/acls: %v %v", enabled, acls)
	}
}

// Rule authorizer-class.
func TestUnknownAuthorizerClass(t *testing.T) {
	_, err := broker.New(broker.Config{Listen: "127.0.0.1:0", Props: map[string]string{"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"}})
	if err == nil || !strings.Contains(err.Error(), "kafka.security.authorizer.AclAuthorizer") {
		t.Fatalf("New: %v", err)
	}
}
