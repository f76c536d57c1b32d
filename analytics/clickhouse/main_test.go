package clickhouse

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relaybell/relaybell/analytics"
	"github.com/relaybell/relaybell/analytics/analyticstest"
)

// The package's tests share one throwaway server started by
// deploy/clickhouse/start.sh; each test gets a database of its own.
// RELAYBELL_TEST_CLICKHOUSE_ADDR points them at a running server instead.
var (
	serverAddr string
	skipReason string
	databases  atomic.Int64
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if addr := os.Getenv("RELAYBELL_TEST_CLICKHOUSE_ADDR"); addr != "" {
		serverAddr = addr
		return m.Run()
	}
	if !serverInstalled() && testing.Short() {
		skipReason = "clickhouse-server is not installed (-short: not installing it)"
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "relaybell-clickhouse-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	scripts, err := filepath.Abs(filepath.Join("..", "..", "deploy", "clickhouse"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	start := time.Now()
	cmd := exec.Command(filepath.Join(scripts, "start.sh"), dir)
	// The server goes when this process does, even when killed mid-run.
	cmd.Env = append(os.Environ(), fmt.Sprintf("CLICKHOUSE_WATCH_PID=%d", os.Getpid()))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting clickhouse: %v\n%s", err, stderr.Bytes())
		return 1
	}
	defer func() {
		stop := exec.Command(filepath.Join(scripts, "stop.sh"), dir)
		stop.Stdout, stop.Stderr = os.Stderr, os.Stderr
		if err := stop.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping clickhouse: %v\n", err)
		}
	}()
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "CLICKHOUSE_ADDR="); ok {
			serverAddr = v
		}
	}
	if serverAddr == "" {
		fmt.Fprintf(os.Stderr, "start.sh printed no CLICKHOUSE_ADDR:\n%s%s", out, stderr.Bytes())
		return 1
	}
	if testing.Verbose() {
		fmt.Fprintf(os.Stderr, "clickhouse at %s, started in %v\n", serverAddr, time.Since(start).Round(time.Millisecond))
	}
	return m.Run()
}

func serverInstalled() bool {
	if _, err := exec.LookPath("clickhouse-server"); err == nil {
		return true
	}
	_, err := os.Stat("/usr/sbin/clickhouse-server")
	return err == nil
}

// openStore opens a store on a database no other test uses, dropped when
// the test ends.
func openStore(t *testing.T) *Store {
	t.Helper()
	if skipReason != "" {
		t.Skip(skipReason)
	}
	cfg := Config{Addr: serverAddr, Database: fmt.Sprintf("relaybell_test_%d_%d", os.Getpid(), databases.Add(1))}
	ctx := context.Background()
	s, err := Open(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() {
		admin, err := Open(ctx, Config{Addr: serverAddr, Database: cfg.Database}, nil)
		if err != nil {
			t.Errorf("dropping test database: %v", err)
			return
		}
		defer admin.Close()
		if err := admin.conn.Exec(ctx, "DROP DATABASE IF EXISTS `"+cfg.Database+"`"); err != nil {
			t.Errorf("dropping test database: %v", err)
		}
	})
	return s
}

func TestStore(t *testing.T) {
	analyticstest.Run(t, func(t *testing.T) analytics.Store { return openStore(t) })
}
