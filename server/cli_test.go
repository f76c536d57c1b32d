package server

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/relaybell/relaybell/accounts"
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
