package accounts

import (
	"errors"
	"strings"
	"testing"
)

func TestPasswordHash(t *testing.T) {
	h, err := HashPassword("correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "$argon2id$v=19$m=19456,t=2,p=1$") || strings.Contains(h, "horse") {
		t.Fatalf("hash %q", h)
	}
	h2, _ := HashPassword("correct horse battery")
	if h == h2 {
		t.Fatal("two hashes of one password are equal: no salt")
	}
	if !CheckPassword(h, "correct horse battery") || CheckPassword(h, "correct horse batter") || CheckPassword(h, "") {
		t.Fatal("CheckPassword")
	}
	for _, bad := range []string{"", "x", "$argon2id$v=19$m=19456,t=2,p=1$$", "$argon2i$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA",
		"$argon2id$v=19$m=99999999,t=2,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA", "$argon2id$v=19$m=19456,t=0,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA",
		h + "$", strings.Replace(h, "$v=19$", "$v=18$", 1)} {
		if CheckPassword(bad, "correct horse battery") {
			t.Errorf("malformed hash %q matched", bad)
		}
	}
}

func TestPasswordRules(t *testing.T) {
	for pw, ok := range map[string]bool{"": false, "1234567": false, "12345678": true, "ééééééé": false, "éééééééé": true,
		strings.Repeat("x", MaxPasswordBytes): true, strings.Repeat("x", MaxPasswordBytes+1): false} {
		if err := CheckPasswordRules(pw); (err == nil) != ok {
			t.Errorf("%q (%d bytes): %v", pw, len(pw), err)
		}
	}
}

func TestNormalizeEmail(t *testing.T) {
	for in, want := range map[string]string{
		" Ann@Example.COM ": "ann@example.com", "a.b+c@sub.example.org": "a.b+c@sub.example.org",
		"": "", "ann": "", "ann@localhost": "", "Ann <ann@example.com>": "", "ann@example.com, bo@example.com": "",
		"ann@exa mple.com": "", "\x00@example.com": "", strings.Repeat("a", 250) + "@example.com": "",
	} {
		got, err := NormalizeEmail(in)
		if want == "" {
			if !errors.Is(err, ErrInvalidEmail) {
				t.Errorf("%q: %q, %v; want invalid", in, got, err)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("%q: %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestToken(t *testing.T) {
	a, ha, err := NewToken()
	if err != nil {
		t.Fatal(err)
	}
	b, _, _ := NewToken()
	if len(a) != 43 || a == b || ha != HashToken(a) || len(ha) != 64 || strings.Contains(ha, a) {
		t.Fatalf("tokens %q %q hash %q", a, b, ha)
	}
}

// FuzzParseHash: no stored hash, however malformed, panics the check or
// names parameters past the bounds.
func FuzzParseHash(f *testing.F) {
	h, _ := HashPassword("x")
	f.Add(h)
	f.Add("$argon2id$v=19$m=1,t=1,p=1$$")
	f.Add("$argon2id$v=19$m=-1,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA")
	f.Fuzz(func(t *testing.T, s string) {
		_, key, p, err := parseHash(s)
		if err == nil && (p.memory > 256<<10 || p.time > 10 || p.threads == 0 || len(key) > 64) {
			t.Fatalf("%q parsed to %+v", s, p)
		}
	})
}
