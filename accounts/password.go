package accounts

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/crypto/argon2"
)

// argon2id parameters: OWASP's first recommendation (19 MiB, 2 passes, one
// lane), about 25 ms a hash on one core of a small server.
const (
	argonMemory  = 19 * 1024 // KiB
	argonTime    = 2
	argonThreads = 1
	argonKeyLen  = 32
	argonSaltLen = 16
)

// Password lengths, in characters: long enough to resist guessing, and a
// bound so that hashing cannot be made to cost without end.
const (
	MinPasswordChars = 8
	MaxPasswordBytes = 1024
)

// CheckPasswordRules reports a password too short or too long.
func CheckPasswordRules(pw string) error {
	if utf8.RuneCountInString(pw) < MinPasswordChars {
		return fmt.Errorf("the password must have at least %d characters", MinPasswordChars)
	}
	if len(pw) > MaxPasswordBytes {
		return fmt.Errorf("the password must have at most %d bytes", MaxPasswordBytes)
	}
	return nil
}

// HashPassword returns the argon2id hash of pw in the PHC string format
// ($argon2id$v=19$m=…,t=…,p=…$salt$hash), with a fresh random salt.
func HashPassword(pw string) (string, error) {
	salt := make([]byte, argonSaltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	key := argon2.IDKey([]byte(pw), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads,
		b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}

var errBadHash = errors.New("not an argon2id hash")

// CheckPassword reports whether pw matches hash (HashPassword's form, with
// whatever parameters it names), in constant time. A malformed hash
// matches nothing.
func CheckPassword(hash, pw string) bool {
	salt, key, p, err := parseHash(hash)
	if err != nil {
		return false
	}
	got := argon2.IDKey([]byte(pw), salt, p.time, p.memory, p.threads, uint32(len(key)))
	return subtle.ConstantTimeCompare(got, key) == 1
}

type argonParams struct {
	memory, time uint32
	threads      uint8
}

func parseHash(hash string) (salt, key []byte, p argonParams, err error) {
	parts := strings.Split(hash, "$")
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" || parts[2] != fmt.Sprintf("v=%d", argon2.Version) {
		return nil, nil, p, errBadHash
	}
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.memory, &p.time, &p.threads); err != nil {
		return nil, nil, p, errBadHash
	}
	// Bounds, so that a stored hash cannot make a check cost without end.
	if p.memory == 0 || p.memory > 256<<10 || p.time == 0 || p.time > 10 || p.threads == 0 {
		return nil, nil, p, errBadHash
	}
	b64 := base64.RawStdEncoding
	if salt, err = b64.DecodeString(parts[4]); err != nil || len(salt) < 8 {
		return nil, nil, p, errBadHash
	}
	if key, err = b64.DecodeString(parts[5]); err != nil || len(key) < 16 || len(key) > 64 {
		return nil, nil, p, errBadHash
	}
	return salt, key, p, nil
}

// dummyHash is checked against when no user has the address, so that a
// login for an unknown address takes as long as one for a known address.
var dummyHash = func() string {
	h, err := HashPassword("relaybell: no such user")
	if err != nil {
		panic(err)
	}
	return h
}()

// NewToken returns a random secret token (256 bits, base64url) and the
// hex SHA-256 under which it is stored.
func NewToken() (token, hash string, err error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", "", err
	}
	token = base64.RawURLEncoding.EncodeToString(b)
	return token, HashToken(token), nil
}

// HashToken is the stored form of a token: its hex SHA-256.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}
