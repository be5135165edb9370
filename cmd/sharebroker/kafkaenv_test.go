package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"software.sslmate.com/src/go-pkcs12"

	"github.com/sharebroker/sharebroker/broker"
	"github.com/sharebroker/sharebroker/internal/testcerts"
)

// kafkaConfigFrom is configFrom with the apache/kafka image's environment
// read as serve reads it.
func kafkaConfigFrom(t *testing.T, args, environ []string) (broker.Config, error) {
	t.Helper()
	return serveConfigFrom(t, args, environ, true)
}

// Rule: kafka-env-name, checked against the examples of Kafka's docker
// README (abc.def, abc-def, abc_def) and KafkaDockerWrapperTest's.
func TestKafkaPropertyName(t *testing.T) {
	for v, want := range map[string]string{
		"KAFKA_ABC_DEF":                                          "abc.def",
		"KAFKA_ABC___DEF":                                        "abc-def",
		"KAFKA_ABC__DEF":                                         "abc_def",
		"KAFKA_LISTENER_SECURITY_PROTOCOL_MAP":                   "listener.security.protocol.map",
		"KAFKA_GROUP_SHARE_RECORD_LOCK_DURATION_MS":              "group.share.record.lock.duration.ms",
		"KAFKA_LISTENER_NAME_SASL__SSL_PLAIN_SASL_JAAS_CONFIG":   "listener.name.sasl_ssl.plain.sasl.jaas.config",
		"KAFKA_SHARE_COORDINATOR_STATE_TOPIC_REPLICATION_FACTOR": "share.coordinator.state.topic.replication.factor",
		"KAFKA_LISTENER_NAME_SSL___INTERNAL_SSL_CLIENT_AUTH":     "listener.name.ssl-internal.ssl.client.auth",
		"KAFKA_LOG_DIRS":                                         "log.dirs",
		"KAFKA_KAFKA_X":                                          "kafka.x", // only the first prefix goes (replaceFirst)
	} {
		if got := kafkaPropertyName(v); got != want {
			t.Errorf("%s: %s, want %s", v, got, want)
		}
	}
}

// plaintextExample is the environment of Kafka's single-node plaintext
// compose example (docker/examples/docker-compose-files/single-node/
// plaintext), with the ports at 0.
var plaintextExample = []string{
	"KAFKA_NODE_ID=1",
	"KAFKA_LISTENER_SECURITY_PROTOCOL_MAP=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,PLAINTEXT_HOST:PLAINTEXT",
	"KAFKA_ADVERTISED_LISTENERS=PLAINTEXT_HOST://localhost:9092,PLAINTEXT://broker:19092",
	"KAFKA_PROCESS_ROLES=broker,controller",
	"KAFKA_CONTROLLER_QUORUM_VOTERS=1@broker:29093",
	"KAFKA_LISTENERS=CONTROLLER://127.0.0.1:0,PLAINTEXT_HOST://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
	"KAFKA_INTER_BROKER_LISTENER_NAME=PLAINTEXT",
	"KAFKA_CONTROLLER_LISTENER_NAMES=CONTROLLER",
	"CLUSTER_ID=4L6g3nShT-eMCtK--X86sw",
	"KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR=1",
	"KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS=0",
	"KAFKA_TRANSACTION_STATE_LOG_MIN_ISR=1",
	"KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR=1",
	"KAFKA_SHARE_COORDINATOR_STATE_TOPIC_REPLICATION_FACTOR=1",
	"KAFKA_SHARE_COORDINATOR_STATE_TOPIC_MIN_ISR=1",
}

// Rules: kafka-env-name, kafka-env-excluded, kafka-env-service-links,
// kraft-accepted. The plaintext example starts (with the JVM's variables
// and a Kubernetes service link beside it), its properties are those
// --config would give, and without --kafka-env none of it is read.
func TestKafkaEnvPlaintextExample(t *testing.T) {
	env := append([]string{
		"KAFKA_HEAP_OPTS=-Xmx1G", "KAFKA_OPTS=-Dx=y", "KAFKA_JMX_HOSTNAME=h", "KAFKA_VERSION=4.1.0",
		"KAFKA_LOG4J_LOGGERS=a=INFO", "KAFKA_PORT=tcp://10.0.0.1:9092", "KAFKA_SERVICE_HOST=10.0.0.1",
		"KAFKA_PORT_9092_TCP_ADDR=10.0.0.1", "OTHER=1",
	}, plaintextExample...)
	cfg, err := kafkaConfigFrom(t, []string{"--kafka-env", "--kafka-config-dir", ""}, env)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ClusterID != "4L6g3nShT-eMCtK--X86sw" {
		t.Errorf("cluster ID %q", cfg.ClusterID)
	}
	for _, p := range []string{"heap.opts", "opts", "jmx.hostname", "version", "port", "service.host"} {
		if _, ok := cfg.Props[p]; ok {
			t.Errorf("property %s from an excluded variable", p)
		}
	}
	if cfg.Props["node.id"] != "1" || cfg.Props["group.initial.rebalance.delay.ms"] != "0" || cfg.Props["controller.listener.names"] != "CONTROLLER" {
		t.Errorf("props %v", cfg.Props)
	}
	b, err := broker.New(cfg)
	if err != nil {
		t.Fatalf("the plaintext example does not start: %v", err)
	}
	b.Close(context.Background())

	cfg, err = kafkaConfigFrom(t, nil, env)
	if err != nil || len(cfg.Props) != 0 || cfg.ClusterID != broker.DefaultClusterID {
		t.Fatalf("without --kafka-env: props %v, cluster %q, %v", cfg.Props, cfg.ClusterID, err)
	}
}

// Rule: kafka-env-unknown. An unknown KAFKA_ property stops the start
// with the very message --config gives for it.
func TestKafkaEnvUnknownPropertyFails(t *testing.T) {
	var msgs []string
	for _, c := range []struct{ args, env []string }{
		{[]string{"--kafka-env", "--kafka-config-dir", ""}, []string{"KAFKA_NO_SUCH_THING=1"}},
		{[]string{"--config", "no.such.thing=1"}, nil},
		{[]string{"--kafka-env", "--kafka-config-dir", ""}, []string{"KAFKA_NUM_PARTITIONS=0"}},
		{[]string{"--config", "num.partitions=0"}, nil},
	} {
		cfg, err := kafkaConfigFrom(t, c.args, c.env)
		if err == nil {
			_, err = broker.New(cfg)
		}
		if err == nil {
			t.Fatalf("%v %v started", c.args, c.env)
		}
		msgs = append(msgs, err.Error())
	}
	if msgs[0] != msgs[1] || !strings.Contains(msgs[0], `unknown broker property "no.such.thing"`) || msgs[2] != msgs[3] {
		t.Fatalf("messages differ from --config's: %q", msgs)
	}
}

// Rule: kafka-env-precedence. Flags on the command line, then
// SHAREBROKER_ variables, then KAFKA_ ones; --config over
// SHAREBROKER_CONFIG_ over KAFKA_.
func TestKafkaEnvPrecedence(t *testing.T) {
	dir := t.TempDir()
	env := []string{
		"CLUSTER_ID=kafka-cluster",
		"KAFKA_NUM_PARTITIONS=2",
		"KAFKA_LOG_RETENTION_MS=1000",
		"KAFKA_MESSAGE_MAX_BYTES=1000",
		"KAFKA_NODE_ID=4",
		"KAFKA_LOG_DIRS=/kafka/logs",
		"KAFKA_LISTENERS=PLAINTEXT://127.0.0.1:0",
		"SHAREBROKER_CONFIG_NUM_PARTITIONS=3",
		"SHAREBROKER_CONFIG_LOG_RETENTION_MS=2000",
		"SHAREBROKER_NODE_ID=5",
	}
	cfg, err := kafkaConfigFrom(t, []string{"--kafka-env", "--kafka-config-dir", "", "--config", "num.partitions=4",
		"--data-dir", dir, "--listeners", "HOST://127.0.0.1:0", "--listener-security-protocol-map", "HOST:PLAINTEXT"}, env)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"num.partitions": "4", "log.retention.ms": "2000", "message.max.bytes": "1000", "listeners": "HOST://127.0.0.1:0"} {
		if cfg.Props[k] != v {
			t.Errorf("%s=%q, want %q", k, cfg.Props[k], v)
		}
	}
	if _, ok := cfg.Props["node.id"]; ok || cfg.NodeID != 5 {
		t.Errorf("node ID %d, node.id %q: SHAREBROKER_NODE_ID wins", cfg.NodeID, cfg.Props["node.id"])
	}
	if _, ok := cfg.Props["log.dirs"]; ok || cfg.DataDir != dir {
		t.Errorf("data dir %q, log.dirs %q: --data-dir wins", cfg.DataDir, cfg.Props["log.dirs"])
	}
	if cfg.ClusterID != "kafka-cluster" {
		t.Errorf("cluster ID %q: CLUSTER_ID applies when no flag names one", cfg.ClusterID)
	}
	cfg, err = kafkaConfigFrom(t, []string{"--kafka-env", "--kafka-config-dir", ""}, append(env, "SHAREBROKER_CLUSTER_ID=sb-cluster"))
	if err != nil || cfg.ClusterID != "sb-cluster" {
		t.Errorf("cluster ID %q (%v): SHAREBROKER_CLUSTER_ID wins", cfg.ClusterID, err)
	}
}

// Rules: kafka-env-image-script (listeners from advertised.listeners; a
// controller-only node refused; the SSL files the image requires),
// kafka-env-file-input (server.properties under the variables).
func TestKafkaEnvImageScript(t *testing.T) {
	cfg, err := kafkaConfigFrom(t, []string{"--kafka-env", "--kafka-config-dir", ""},
		[]string{"KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://broker:9092,HOST://localhost:29092"})
	if err != nil || cfg.Props["listeners"] != "PLAINTEXT://0.0.0.0:9092,HOST://0.0.0.0:29092" {
		t.Errorf("derived listeners %q (%v)", cfg.Props["listeners"], err)
	}
	if _, err := kafkaConfigFrom(t, []string{"--kafka-env", "--kafka-config-dir", ""}, []string{"KAFKA_PROCESS_ROLES=controller"}); err == nil || !strings.Contains(err.Error(), "controller-only") {
		t.Errorf("a controller-only node: %v", err)
	}
	if _, err := kafkaConfigFrom(t, []string{"--kafka-env", "--kafka-config-dir", ""}, []string{"KAFKA_ADVERTISED_LISTENERS=SSL://localhost:9093"}); err == nil || !strings.Contains(err.Error(), "KAFKA_SSL_KEYSTORE_FILENAME is not set") {
		t.Errorf("SSL without the keystore variables: %v", err)
	}

	dir := t.TempDir()
	props := "# comment\n! other comment\nnum.partitions = 6\nlog.retention.ms:5000\nadvertised.listeners=PLAINTEXT://a:1,\\\n  HOST://b:2\nsasl.enabled.mechanisms=PLAIN\n"
	if err := os.WriteFile(filepath.Join(dir, "server.properties"), []byte(props), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err = kafkaConfigFrom(t, []string{"--kafka-env", "--kafka-config-dir", dir}, []string{"KAFKA_NUM_PARTITIONS=7"})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"num.partitions": "7", "log.retention.ms": "5000", "advertised.listeners": "PLAINTEXT://a:1,HOST://b:2", "sasl.enabled.mechanisms": "PLAIN"} {
		if cfg.Props[k] != v {
			t.Errorf("%s=%q, want %q", k, cfg.Props[k], v)
		}
	}
}

// Rule: kafka-env-file-input: server.properties read as
// java.util.Properties reads it.
func TestReadJavaProperties(t *testing.T) {
	got, err := readJavaProperties(strings.NewReader("a=1\r\n  b : 2\nc 3\n# x=y\n! z\nd=x\\\n   y\ne=\\u0041\\t\nf\\=g=h\nlast=on\\\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a": "1", "b": "2", "c": "3", "d": "xy", "e": "A\t", "f=g": "h", "last": "on"}
	if len(got) != len(want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%q=%q, want %q", k, got[k], v)
		}
	}
	if _, err := readJavaProperties(strings.NewReader("k=\\u00\n")); err == nil {
		t.Error("a short \\u escape: no error")
	}
}

// Rule: kafka-jaas-users: Kafka's example JAAS file
// (docker/examples/fixtures/sasl/broker_jaas.conf) and a listener's
// sasl.jaas.config give PLAIN users.
func TestJAASUsers(t *testing.T) {
	file := `// a comment
KafkaServer {
    org.apache.kafka.common.security.plain.PlainLoginModule required
    username="admin"
    password="admin-secret"
    user_admin="admin-secret"
    user_alice="alice-secret";
};
Client { x.Y required a="b"; };
`
	sections, err := parseJAASFile(file)
	if err != nil {
		t.Fatal(err)
	}
	users, err := jaasPlainUsers(sections["KafkaServer"])
	if err != nil || len(users) != 2 || users[0] != (broker.SASLUser{Name: "admin", Password: "admin-secret"}) || users[1] != (broker.SASLUser{Name: "alice", Password: "alice-secret"}) {
		t.Fatalf("users %+v, %v", users, err)
	}
	for _, bad := range []string{`KafkaServer { a b c="d" };`, `KafkaServer { a required user_x="y"`, `/* open`} {
		s, err := parseJAASFile(bad)
		if err == nil {
			_, err = jaasPlainUsers(s["KafkaServer"])
		}
		if err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// Rules: kafka-keystore, kafka-jaas-users, kafka-env-image-script. The
// image's SSL variables name a PKCS12 keystore and truststore (the format
// keytool writes, also under the name .jks) in the secrets directory, with
// their passwords in files; a listener's sasl.jaas.config gives the users.
// kgo connects over SASL_SSL, trusting the keystore's CA and checking the
// host name, with a client certificate the truststore's CA signed.
func TestKafkaEnvKeystoreAndJAASServe(t *testing.T) {
	secrets := t.TempDir()
	kafkaSecretsDir = secrets
	t.Cleanup(func() { kafkaSecretsDir = "/etc/kafka/secrets" })
	ca := testcerts.NewCA(t, "test CA")
	serverKey, serverCert := ca.Issue(t, "localhost")
	clientKey, clientCert := ca.Issue(t, "client")
	ks, err := pkcs12.Modern.Encode(serverKey, serverCert, []*x509.Certificate{ca.Cert}, "ks-pw")
	if err != nil {
		t.Fatal(err)
	}
	ts, err := pkcs12.Modern.EncodeTrustStore([]*x509.Certificate{ca.Cert}, "ts-pw")
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"kafka01.keystore.jks": ks, "kafka.truststore.jks": ts,
		"ks_creds": []byte("ks-pw\n"), "key_creds": []byte("ks-pw\n"), "ts_creds": []byte("ts-pw")} {
		if err := os.WriteFile(filepath.Join(secrets, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := kafkaConfigFrom(t, []string{"--kafka-env", "--kafka-config-dir", "", "--http", ""}, []string{
		"KAFKA_LISTENERS=SASL_SSL://127.0.0.1:0",
		"KAFKA_ADVERTISED_LISTENERS=SASL_SSL://localhost:9093",
		"KAFKA_SSL_KEYSTORE_FILENAME=kafka01.keystore.jks",
		"KAFKA_SSL_KEYSTORE_CREDENTIALS=ks_creds",
		"KAFKA_SSL_KEY_CREDENTIALS=key_creds",
		"KAFKA_SSL_TRUSTSTORE_FILENAME=kafka.truststore.jks",
		"KAFKA_SSL_TRUSTSTORE_CREDENTIALS=ts_creds",
		"KAFKA_SSL_CLIENT_AUTH=required",
		"KAFKA_SASL_ENABLED_MECHANISMS=PLAIN",
		`KAFKA_LISTENER_NAME_SASL__SSL_PLAIN_SASL_JAAS_CONFIG=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`,
	})
	if err != nil {
		t.Fatal(err)
	}
	// Advertise the port the listener got.
	cfg.Props["advertised.listeners"] = ""
	b, err := broker.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close(context.Background()) })
	_, port, _ := net.SplitHostPort(b.Addr().String())
	addr := net.JoinHostPort("localhost", port)

	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	clientPair := tls.Certificate{Certificate: [][]byte{clientCert.Raw}, PrivateKey: clientKey}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, pw := range []string{"alice-secret", "wrong"} {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr),
			kgo.DialTLSConfig(&tls.Config{RootCAs: pool, ServerName: "localhost", Certificates: []tls.Certificate{clientPair}}),
			kgo.SASL(plain.Auth{User: "alice", Pass: pw}.AsMechanism()))
		if err != nil {
			t.Fatal(err)
		}
		err = cl.Ping(ctx)
		cl.Close()
		if (err != nil) != (pw == "wrong") {
			t.Fatalf("alice with %q: %v", pw, err)
		}
	}
}

// Rules: kraft-accepted, controller-listener-skipped, node-id-property.
// The plaintext example served: each of its two client listeners answers
// with its own advertised address, node ID 1 and the example's cluster
// ID, and a record produced through one is fetched through the other; the
// CONTROLLER listener is not opened.
func TestKafkaEnvPlaintextExampleServe(t *testing.T) {
	cfg, err := kafkaConfigFrom(t, []string{"--kafka-env", "--kafka-config-dir", "", "--http", ""}, plaintextExample)
	if err != nil {
		t.Fatal(err)
	}
	b, err := broker.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close(context.Background()) })
	if b.ListenerAddr("CONTROLLER") != nil {
		t.Fatal("the CONTROLLER listener is open")
	}
	// The advertised names lead to the listeners' real ports.
	real := map[string]string{
		"localhost:9092": b.ListenerAddr("PLAINTEXT_HOST").String(),
		"broker:19092":   b.ListenerAddr("PLAINTEXT").String(),
	}
	dial := func(ctx context.Context, network, host string) (net.Conn, error) {
		if r, ok := real[host]; ok {
			host = r
		}
		return (&net.Dialer{}).DialContext(ctx, network, host)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var fetched []string
	for i, seed := range []string{"localhost:9092", "broker:19092"} {
		cl, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.Dialer(dial), kgo.AllowAutoTopicCreation(),
			kgo.DefaultProduceTopic("example"), kgo.ConsumeTopics("example"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		m, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Brokers) != 1 || m.Brokers[0].NodeID != 1 || m.Brokers[0].Host+":"+strconv.Itoa(int(m.Brokers[0].Port)) != seed ||
			m.ClusterID == nil || *m.ClusterID != "4L6g3nShT-eMCtK--X86sw" {
			t.Fatalf("metadata through %s: brokers %+v cluster %v", seed, m.Brokers, m.ClusterID)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(seed)}).FirstErr(); err != nil {
			t.Fatalf("produce through %s: %v", seed, err)
		}
		for len(fetched) <= i && ctx.Err() == nil {
			for _, r := range cl.PollFetches(ctx).Records() {
				fetched = append(fetched, string(r.Value))
			}
		}
	}
	if len(fetched) < 2 || fetched[0] != "localhost:9092" {
		t.Fatalf("fetched %q", fetched)
	}
}
