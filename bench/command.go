package bench

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Command is `relaybell bench`: it runs the broadcasts and prints a line per
// mode and audience size.
func Command(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	modes := fs.String("modes", Embedded+","+Cluster, "modes to measure: embedded, cluster")
	audiences := fs.String("audience", "10000,100000,1000000", "comma-separated audience sizes")
	fakepush := fs.String("fakepush", "bin/fakepush", "fake push service binary (go build -o bin/fakepush ./cmd/fakepush)")
	script := fs.String("cluster-script", "deploy/cluster.sh", "the local cluster's script")
	pg := fs.String("postgres", envOr("RELAYBELL_POSTGRES", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"), "PostgreSQL of cluster runs (a schema per run, dropped after)")
	concurrency := fs.Int("concurrency", 256, "the bare sender's pushes in flight (the pusher's per-origin limit)")
	workdir := fs.String("workdir", "", "keep each run's data and logs here (default: a temporary directory)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg := Config{FakePush: *fakepush, ClusterScript: *script, Postgres: *pg, Concurrency: *concurrency, WorkDir: *workdir, Log: stderr}
	for _, m := range strings.Split(*modes, ",") {
		if m = strings.TrimSpace(m); m != Embedded && m != Cluster {
			return fmt.Errorf("unknown mode %q (want embedded or cluster)", m)
		}
		cfg.Modes = append(cfg.Modes, strings.TrimSpace(m))
	}
	for _, a := range strings.Split(*audiences, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(a))
		if err != nil || n <= 0 {
			return fmt.Errorf("bad audience size %q", a)
		}
		cfg.Audiences = append(cfg.Audiences, n)
	}
	results, err := Run(ctx, cfg)
	fmt.Fprintln(stdout, "mode      audience  end-to-end    bare sender     ratio  first push  end-to-end  subscribe  peak RSS MiB per process")
	for _, r := range results {
		fmt.Fprintln(stdout, r)
	}
	return err
}

func envOr(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}

// dropSchema removes a cluster run's schema.
func dropSchema(dsn, schema string) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return
	}
	defer conn.Close(ctx)
	conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
}
