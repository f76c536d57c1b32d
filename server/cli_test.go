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
	storesqlite "github.com/relaybell/relaybell/store/sqlite"
	"github.com/relaybell/relaybell/store/storetest"
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
	dsn, err := storepostgres.WithSearchPath(storetest.PostgresDSN(), storetest.PostgresSchema(t))
	if err != nil {
		t.Fatal(err)
	}
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
