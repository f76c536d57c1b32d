package server

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/relaybell/relaybell/accounts"
	storepostgres "github.com/relaybell/relaybell/store/postgres"
	"github.com/relaybell/relaybell/store/postgres/pgtest"
	storesqlite "github.com/relaybell/relaybell/store/sqlite"
)

// relaybell admin user create makes a verified owner, who can sign in with
// the password read from standard input, and refuses a taken address and a
// short password.
func TestAdminUserCreate(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	run := func(password string, args ...string) (map[string]string, error) {
		var out, errs bytes.Buffer
		err := createUser(ctx, append(args, "--data", dir), strings.NewReader(password+"\n"), &out, &errs)
		var v map[string]string
		if err == nil {
			if jerr := json.Unmarshal(out.Bytes(), &v); jerr != nil {
				t.Fatalf("output %q: %v", out.String(), jerr)
			}
		}
		return v, err
	}
	got, err := run("a long passphrase", "--email", "Ann@Example.com", "--name", "Ann")
	if err != nil || got["email"] != "ann@example.com" || got["userId"] == "" || got["accountId"] == "" {
		t.Fatalf("%v %v", got, err)
	}
	if _, err := run("a long passphrase", "--email", "ann@example.com"); err == nil || err.Error() != "ann@example.com has an account already" {
		t.Fatalf("taken: %v", err)
	}
	if _, err := run("short", "--email", "bo@example.com"); err == nil || !strings.Contains(err.Error(), "at least 8 characters") {
		t.Fatalf("short: %v", err)
	}

	st, err := storesqlite.Open(ctx, filepath.Join(dir, "relaybell.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	u, err := st.UserByEmail(ctx, "ann@example.com")
	if err != nil || !u.EmailVerified || !accounts.CheckPassword(u.PasswordHash, "a long passphrase") {
		t.Fatalf("stored %+v %v", u, err)
	}
	role, err := st.Role(ctx, u.ID, got["accountId"])
	if err != nil || role != "owner" {
		t.Fatalf("role %q %v", role, err)
	}
	acc, err := st.Account(ctx, got["accountId"])
	if err != nil || !acc.EmailVerified {
		t.Fatalf("account %+v %v", acc, err)
	}
}

// With --postgres the command writes to the cluster's store.
func TestAdminUserCreatePostgres(t *testing.T) {
	dsn := pgtest.DSN(t)
	ctx := context.Background()
	var out, errs bytes.Buffer
	if err := createUser(ctx, []string{"--email", "ops@example.com", "--postgres", dsn}, strings.NewReader("a long passphrase\n"), &out, &errs); err != nil {
		if testing.Short() || os.Getenv("CI") == "" && strings.Contains(err.Error(), "connect") {
			t.Skipf("PostgreSQL: %v", err)
		}
		t.Fatalf("%v: %s", err, errs.String())
	}
	st, err := storepostgres.Open(ctx, dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if u, err := st.UserByEmail(ctx, "ops@example.com"); err != nil || !u.EmailVerified {
		t.Fatalf("%+v %v", u, err)
	}
}

// relaybell version prints the version the binary was linked with.
func TestVersionCommand(t *testing.T) {
	old := Version
	Version = "v1.2.3"
	defer func() { Version = old }()
	var out bytes.Buffer
	if err := Main(context.Background(), []string{"version"}, &out, &out); err != nil || out.String() != "relaybell v1.2.3\n" {
		t.Fatalf("version: %q %v", out.String(), err)
	}
}

// ParseServe reads serve's flags and environment as serve does and refuses
// what serve would: an unknown flag, a stray argument, a configuration
// Validate refuses.
func TestParseServe(t *testing.T) {
	t.Setenv("RELAYBELL_KAFKA", "kafka:9092")
	cfg, err := ParseServe([]string{"--roles", "api", "--postgres", "postgres://db/x"})
	if err != nil || cfg.Roles != "api" || cfg.Kafka != "kafka:9092" || cfg.Postgres != "postgres://db/x" || cfg.HTTPAddr != ":8080" {
		t.Fatalf("%+v %v", cfg, err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--no-such-flag"}, "flag provided but not defined: -no-such-flag"},
		{[]string{"api", "--roles", "api"}, `serve takes flags only, not ["api" "--roles" "api"]`},
		{[]string{"--roles", "pusher"}, "a pusher node gets batches only from a cluster: --join one, or run the fanout role too"},
		{[]string{"--log-level", "loud"}, `--log-level or RELAYBELL_LOG_LEVEL "loud" is not debug, info, warn or error`},
	} {
		if _, err := ParseServe(tc.args); err == nil || err.Error() != tc.want {
			t.Errorf("ParseServe(%q) = %v, want %q", tc.args, err, tc.want)
		}
	}
}
