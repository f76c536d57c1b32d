// Command devkafka runs a Kafka-protocol broker cluster in one process
// (franz-go's kfake) on fixed ports, for local clusters and the fault
// tests: `make cluster` starts it in place of a real Kafka, which has no
// Debian package. It keeps everything in memory unless -data is given, and
// is not for production.
//
//	devkafka -ports 19092,19093,19094 [-data DIR]
package main

import (
	"flag"
	"log"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	portList := flag.String("ports", "19092,19093,19094", "comma-separated broker ports on 127.0.0.1, one broker each")
	data := flag.String("data", "", "directory to persist the log in (default: memory only)")
	flag.Parse()
	var ports []int
	for _, p := range strings.Split(*portList, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n <= 0 || n > 65535 {
			log.Fatalf("devkafka: bad port %q", p)
		}
		ports = append(ports, n)
	}
	opts := []kfake.Opt{
		kfake.NumBrokers(len(ports)),
		kfake.Ports(ports...),
		kfake.GroupMinSessionTimeout(time.Second),
	}
	if *data != "" {
		opts = append(opts, kfake.DataDir(*data))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		log.Fatalf("devkafka: %v", err)
	}
	log.Printf("devkafka: brokers on %s", strings.Join(c.ListenAddrs(), ","))
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	c.Close()
}
