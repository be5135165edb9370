// Command kfakebroker runs franz-go's kfake as a one-broker cluster on a
// loopback port, for benchmarks that compare processes: start time and
// idle memory (BenchmarkStartup). kfake's own main binds fixed ports and
// starts three brokers; this is the smallest program that serves Kafka
// with kfake, as cmd/sharebroker is for sharebroker.
//
//	kfakebroker -listen 127.0.0.1:0
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "HOST:PORT to serve on")
	flag.Parse()
	if _, _, err := net.SplitHostPort(*listen); err != nil {
		fmt.Fprintln(os.Stderr, "kfakebroker: -listen:", err)
		os.Exit(2)
	}
	// kfake picks its own address; ListenFn puts it where we were asked.
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.ListenFn(func(network, _ string) (net.Listener, error) {
		return net.Listen(network, *listen)
	}))
	if err != nil {
		fmt.Fprintln(os.Stderr, "kfakebroker:", err)
		os.Exit(1)
	}
	defer c.Close()
	fmt.Println(c.ListenAddrs()[0])
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
}
