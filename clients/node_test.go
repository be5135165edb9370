package clients

import (
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// The Node.js clients live in clients/node, pinned by its package-lock.json;
// node_modules is not committed, so the first test that needs it runs
// npm ci (once per test binary).

var npmCI struct {
	once sync.Once
	err  error
}

// lookNode returns the node executable once clients/node/node_modules is
// installed, skipping (failing under CI) when node or npm is missing.
func lookNode(t *testing.T) string {
	t.Helper()
	node := lookTool(t, "node", "apt-get install nodejs npm, or Node.js 18+ from nodejs.org")
	if _, err := os.Stat(filepath.Join("node", "node_modules", "kafkajs", "package.json")); err == nil {
		return node
	}
	npm := lookTool(t, "npm", "apt-get install npm")
	npmCI.once.Do(func() {
		_, npmCI.err = run(t, cmdSpec{name: npm, args: []string{"ci", "--no-audit", "--no-fund", "--loglevel=warn"},
			dir: "node", timeout: 3 * time.Minute})
	})
	if npmCI.err != nil {
		missing(t, "npm ci in clients/node failed (needs the npm registry): %v", npmCI.err)
	}
	return node
}

func TestNodeKafkaJSGroupResumesFromCommit(t *testing.T) {
	node := lookNode(t)
	b := startBroker(t)
	adm := admin(t, b.Addr)
	const topic, group, partitions = "node-events", "node-group", 2
	createTopic(t, adm, topic, partitions)
	checkGroupResume(t, adm, topic, group, partitions, func(prefix string, count int) (string, error) {
		return run(t, cmdSpec{name: node, args: []string{"group.js", b.Addr, topic, group, prefix, strconv.Itoa(count)},
			dir: "node", env: []string{"KAFKAJS_NO_PARTITIONER_WARNING=1"}, timeout: 45 * time.Second})
	})
}
