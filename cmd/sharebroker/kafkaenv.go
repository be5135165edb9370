package main

// The apache/kafka image's environment (docs/kafka-env.md). With
// --kafka-env (SHAREBROKER_KAFKA_ENV=true, which the container image sets)
// serve reads the variables a compose file or a testcontainers call
// written for apache/kafka gives that image, as the image reads them:
//
//   - KAFKA_<NAME> is the property the image's rule makes of NAME
//     (kafka-env-name), except the variables the image keeps for its JVM
//     launcher (kafka-env-excluded);
//   - CLUSTER_ID is the cluster ID;
//   - the image's configure script's own steps: listeners derived from
//     advertised.listeners, and the SSL files named relative to
//     /etc/kafka/secrets (kafka-env-image-script);
//   - the server.properties of the image's file input directory,
//     /mnt/shared/config (--kafka-config-dir), under the variables
//     (kafka-env-file-input).
//
// The properties join --config's list ahead of SHAREBROKER_CONFIG_* and
// --config, so both win over them, and are checked as --config's are
// (kafka-env-precedence).

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

const (
	kafkaEnvFlag       = "kafka-env"
	kafkaConfigDirFlag = "kafka-config-dir"
	// defaultKafkaConfigDir is where the apache/kafka image reads its file
	// input (docker/jvm/launch: --mounted-configs-dir /mnt/shared/config).
	defaultKafkaConfigDir = "/mnt/shared/config"
	kafkaEnvPrefix        = "KAFKA_"
	envClusterID          = "CLUSTER_ID"
)

// kafkaSecretsDir is where the image's configure script looks for the
// files KAFKA_SSL_*_FILENAME and *_CREDENTIALS name; a variable for tests.
var kafkaSecretsDir = "/etc/kafka/secrets"

// kafkaImageVariables are the KAFKA_ variables the image does not turn
// into properties: KafkaDockerWrapper's Constants.ExcludeServerPropsEnv
// (Kafka 4.x; core/src/main/scala/kafka/docker/KafkaDockerWrapper.scala).
// They configure the JVM and log4j, which this broker does not have.
var kafkaImageVariables = []string{
	"KAFKA_VERSION",
	"KAFKA_HEAP_OPTS",
	"KAFKA_LOG4J_OPTS",
	"KAFKA_OPTS",
	"KAFKA_JMX_OPTS",
	"KAFKA_JVM_PERFORMANCE_OPTS",
	"KAFKA_GC_LOG_OPTS",
	"KAFKA_LOG4J_ROOT_LOGLEVEL",
	"KAFKA_LOG4J_LOGGERS",
	"KAFKA_TOOLS_LOG4J_LOGLEVEL",
	"KAFKA_JMX_HOSTNAME",
}

// kafkaSSLFileVariables are the configure script's names for the SSL
// files and their password files, relative to kafkaSecretsDir. They are
// not properties: the script turns them into ssl.keystore.location and
// the passwords (kafka-env-image-script).
var kafkaSSLFileVariables = []string{
	"KAFKA_SSL_KEYSTORE_FILENAME",
	"KAFKA_SSL_KEYSTORE_CREDENTIALS",
	"KAFKA_SSL_KEY_CREDENTIALS",
	"KAFKA_SSL_TRUSTSTORE_FILENAME",
	"KAFKA_SSL_TRUSTSTORE_CREDENTIALS",
}

// kubernetesServiceLink matches what Kubernetes adds to a pod's
// environment for a Service named kafka (KAFKA_PORT=tcp://...,
// KAFKA_SERVICE_HOST, ...). The image writes them into server.properties,
// where Kafka ignores unknown names; here an unknown name stops the
// start, so they are skipped by shape instead (kafka-env-service-links).
var kubernetesServiceLink = regexp.MustCompile(`^KAFKA_(SERVICE_HOST|SERVICE_PORT(_[A-Z0-9_]+)?|PORT(_[0-9]+_(TCP|UDP|SCTP)(_(PROTO|PORT|ADDR))?)?)$`)

// kafkaPropertyName is the property the image makes of a KAFKA_ variable
// (kafka-env-name), as KafkaDockerWrapper.getServerConfigsFromEnv does:
// the prefix dropped, lower case, then "_" to ".", "..." (from "___") to
// "-", and ".." (from "__") to "_".
func kafkaPropertyName(variable string) string {
	name := strings.ToLower(strings.TrimPrefix(variable, kafkaEnvPrefix))
	name = strings.ReplaceAll(name, "_", ".")
	name = strings.ReplaceAll(name, "...", "-")
	return strings.ReplaceAll(name, "..", "_")
}

// kafkaEnv is what the image's environment makes of one start.
type kafkaEnv struct {
	// props are KEY=VALUE in --config's form: the file input's first,
	// then the variables', each sorted by name.
	props []string
	// clusterID is CLUSTER_ID ("" if unset).
	clusterID string
	// jaasFile is the JAAS file KAFKA_OPTS names with
	// -Djava.security.auth.login.config ("" if none).
	jaasFile string
	// notes are what start-up logs about the environment.
	notes []string
}

// readKafkaEnv reads environ (os.Environ form) and the file input in
// configDir ("" for none) as the apache/kafka image does.
func readKafkaEnv(environ []string, configDir string) (*kafkaEnv, error) {
	vars := make(map[string]string)
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[k] = v
		}
	}
	out := &kafkaEnv{clusterID: vars[envClusterID]}
	if configDir != "" {
		path := filepath.Join(configDir, "server.properties")
		f, err := os.Open(path)
		switch {
		case err == nil:
			fileProps, err := readJavaProperties(f)
			f.Close()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			for _, k := range slices.Sorted(maps.Keys(fileProps)) {
				out.props = append(out.props, k+"="+fileProps[k])
			}
			out.notes = append(out.notes, "read Kafka properties from "+path)
		case !os.IsNotExist(err):
			return nil, fmt.Errorf("kafka file input: %w", err)
		}
	}
	props := make(map[string]string)
	for k, v := range vars {
		switch {
		case !strings.HasPrefix(k, kafkaEnvPrefix) || len(k) == len(kafkaEnvPrefix):
		case slices.Contains(kafkaImageVariables, k), slices.Contains(kafkaSSLFileVariables, k):
		case kubernetesServiceLink.MatchString(k):
			out.notes = append(out.notes, k+" skipped: a Kubernetes service link, not a property")
		default:
			props[kafkaPropertyName(k)] = v
		}
	}
	if roles, ok := props["process.roles"]; ok && strings.TrimSpace(strings.ToLower(roles)) == "controller" {
		return nil, fmt.Errorf("KAFKA_PROCESS_ROLES=%s: a controller-only node has nothing to run here; sharebroker is the broker and its own controller", roles)
	}
	// The configure script derives listeners from advertised.listeners,
	// every host replaced by 0.0.0.0, when KAFKA_LISTENERS is not set.
	if adv, ok := props["advertised.listeners"]; ok && props["listeners"] == "" {
		props["listeners"] = advertisedToListeners(adv)
		out.notes = append(out.notes, "KAFKA_LISTENERS derived from KAFKA_ADVERTISED_LISTENERS: "+props["listeners"])
	}
	if err := kafkaSSLFiles(vars, props); err != nil {
		return nil, err
	}
	if opts := vars["KAFKA_OPTS"]; opts != "" {
		out.jaasFile = jaasFileOf(opts)
	}
	for _, k := range slices.Sorted(maps.Keys(props)) {
		out.props = append(out.props, k+"="+props[k])
	}
	return out, nil
}

var advertisedHost = regexp.MustCompile(`://[^:]*:`)

// advertisedToListeners is the configure script's
// sed -e 's|://[^:]*:|://0.0.0.0:|g'.
func advertisedToListeners(advertised string) string {
	return advertisedHost.ReplaceAllString(advertised, "://0.0.0.0:")
}

// kafkaSSLFiles is the configure script's SSL step: the keystore (and,
// with client authentication, the truststore) named relative to
// /etc/kafka/secrets, their passwords read from the files the
// *_CREDENTIALS variables name there. The script requires them when an
// advertised listener is SSL or SASL_SSL; so does this.
func kafkaSSLFiles(vars, props map[string]string) error {
	if !strings.Contains(props["advertised.listeners"], "SSL://") {
		return nil
	}
	need := func(v string) (string, error) {
		name, ok := vars[v]
		if !ok || name == "" {
			return "", fmt.Errorf("%s is not set: the apache/kafka image needs it with an SSL advertised listener", v)
		}
		return filepath.Join(kafkaSecretsDir, name), nil
	}
	secret := func(v string) (string, error) {
		path, err := need(v)
		if err != nil {
			return "", err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("%s: %w", v, err)
		}
		// $(cat file) drops trailing newlines.
		return strings.TrimRight(string(b), "\n"), nil
	}
	var err error
	set := func(prop string, f func(string) (string, error), v string) {
		if err == nil {
			props[prop], err = f(v)
		}
	}
	set("ssl.keystore.location", need, "KAFKA_SSL_KEYSTORE_FILENAME")
	set("ssl.key.password", secret, "KAFKA_SSL_KEY_CREDENTIALS")
	set("ssl.keystore.password", secret, "KAFKA_SSL_KEYSTORE_CREDENTIALS")
	if ca := props["ssl.client.auth"]; strings.Contains(ca, "required") || strings.Contains(ca, "requested") {
		set("ssl.truststore.location", need, "KAFKA_SSL_TRUSTSTORE_FILENAME")
		set("ssl.truststore.password", secret, "KAFKA_SSL_TRUSTSTORE_CREDENTIALS")
	}
	return err
}

var jaasOption = regexp.MustCompile(`-Djava\.security\.auth\.login\.config=("[^"]*"|\S+)`)

// jaasFileOf finds the JAAS file in a KAFKA_OPTS value.
func jaasFileOf(opts string) string {
	m := jaasOption.FindStringSubmatch(opts)
	if m == nil {
		return ""
	}
	return strings.Trim(m[1], `"`)
}

// applyKafkaEnv applies the image's environment to f when --kafka-env is
// on (kafka-env-precedence): a command-line flag or its SHAREBROKER_
// variable wins over the KAFKA_ variable with the same meaning (CLUSTER_ID
// and --cluster-id, node.id and --node-id, log.dirs and --data-dir), and
// the KAFKA_ properties go first in --config's list, so
// SHAREBROKER_CONFIG_* and --config win over them.
func applyKafkaEnv(cmd *cobra.Command, f *serveFlags, environ []string) error {
	if !f.kafkaEnv {
		return nil
	}
	ke, err := readKafkaEnv(environ, f.kafkaConfigDir)
	if err != nil {
		return err
	}
	fs := cmd.Flags()
	f.kafkaNotes = append(f.kafkaNotes, ke.notes...)
	if ke.clusterID != "" {
		if fs.Changed("cluster-id") {
			f.kafkaNotes = append(f.kafkaNotes, "CLUSTER_ID not used: --cluster-id wins")
		} else {
			f.clusterID = ke.clusterID
		}
	}
	overriddenBy := map[string]string{"node.id": "node-id", "broker.id": "node-id", "log.dirs": "data-dir", "log.dir": "data-dir"}
	var props []string
	for _, kv := range ke.props {
		k, _, _ := strings.Cut(kv, "=")
		if flag, ok := overriddenBy[k]; ok && fs.Changed(flag) {
			f.kafkaNotes = append(f.kafkaNotes, fmt.Sprintf("Kafka property %s not used: --%s wins", k, flag))
			continue
		}
		props = append(props, kv)
	}
	f.configs = append(props, f.configs...)
	if ke.jaasFile != "" {
		f.jaasFile = ke.jaasFile
	}
	return nil
}

// readJavaProperties reads a .properties file as java.util.Properties
// does, for what server.properties files hold: "#" and "!" comments,
// key=value, key:value or key value, a backslash at the end of a line
// continuing it, and the escapes \t \n \r \f \\ and \uXXXX.
func readJavaProperties(r io.Reader) (map[string]string, error) {
	out := make(map[string]string)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var logical strings.Builder
	for sc.Scan() {
		line := strings.TrimLeft(sc.Text(), " \t\f")
		if logical.Len() == 0 && (line == "" || line[0] == '#' || line[0] == '!') {
			continue
		}
		if trailingBackslashes(line)%2 == 1 {
			logical.WriteString(line[:len(line)-1])
			continue
		}
		logical.WriteString(line)
		if err := addProperty(out, logical.String()); err != nil {
			return nil, err
		}
		logical.Reset()
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	// A continuation on the last line ends with the file.
	if logical.Len() > 0 {
		if err := addProperty(out, logical.String()); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// addProperty adds one logical line's key and value to out.
func addProperty(out map[string]string, line string) error {
	k, v := splitProperty(line)
	key, err := unescapeProperty(k)
	if err != nil {
		return err
	}
	value, err := unescapeProperty(v)
	if err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	out[key] = value
	return nil
}

func trailingBackslashes(s string) int {
	n := 0
	for i := len(s) - 1; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	return n
}

// splitProperty splits at the first unescaped '=', ':' or white space,
// skipping white space and one separator after the key.
func splitProperty(s string) (key, value string) {
	i := 0
	for ; i < len(s); i++ {
		if s[i] == '\\' {
			i++
			continue
		}
		if s[i] == '=' || s[i] == ':' || s[i] == ' ' || s[i] == '\t' || s[i] == '\f' {
			break
		}
	}
	key, rest := s[:min(i, len(s))], s[min(i, len(s)):]
	rest = strings.TrimLeft(rest, " \t\f")
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = strings.TrimLeft(rest[1:], " \t\f")
	}
	return key, rest
}

func unescapeProperty(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+5 > len(s) {
				return "", fmt.Errorf("malformed \\u escape in %q", s)
			}
			r, err := strconv.ParseUint(s[i+1:i+5], 16, 16)
			if err != nil {
				return "", fmt.Errorf("malformed \\u escape in %q", s)
			}
			b.WriteRune(rune(r))
			i += 4
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), nil
}
