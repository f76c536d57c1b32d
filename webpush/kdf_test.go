package webpush

import (
	"bytes"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"testing"
)

func TestKDFMatchesCryptoHKDF(t *testing.T) {
	for _, n := range [][2]int{{16, 32}, {32, 32}, {0, 1}, {64, 0}, {16, keyInfoLen}} {
		salt, ikm := make([]byte, n[0]), make([]byte, 32)
		info := make([]byte, n[1])
		rand.Read(salt)
		rand.Read(ikm)
		rand.Read(info)

		wantPRK, err := hkdf.Extract(sha256.New, ikm, salt)
		if err != nil {
			t.Fatal(err)
		}
		prk := hkdfExtract(salt, ikm)
		if !bytes.Equal(prk[:], wantPRK) {
			t.Errorf("salt %d bytes: extract = %x, want %x", n[0], prk, wantPRK)
		}
		for _, l := range []int{12, 16, 32} {
			want, err := hkdf.Expand(sha256.New, wantPRK, string(info), l)
			if err != nil {
				t.Fatal(err)
			}
			if got := hkdfExpand32(&prk, info); !bytes.Equal(got[:l], want) {
				t.Errorf("info %d bytes, L=%d: expand = %x, want %x", n[1], l, got[:l], want)
			}
		}
	}
}

// BenchmarkKDF compares the RFC 8291 key schedule with crypto/hkdf and with
// the stack-only helpers encrypt uses.
func BenchmarkKDF(b *testing.B) {
	secret, auth, salt := make([]byte, 32), make([]byte, 16), make([]byte, 16)
	info := make([]byte, keyInfoLen)
	rand.Read(secret)
	rand.Read(auth)
	rand.Read(salt)

	b.Run("crypto-hkdf", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			prkKey, _ := hkdf.Extract(sha256.New, secret, auth)
			ikm, _ := hkdf.Expand(sha256.New, prkKey, string(info), 32)
			prk, _ := hkdf.Extract(sha256.New, ikm, salt)
			hkdf.Expand(sha256.New, prk, cekInfo, 16)
			hkdf.Expand(sha256.New, prk, nonceInfo, 12)
		}
	})
	b.Run("stack", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			prkKey := hkdfExtract(auth, secret)
			ikm := hkdfExpand32(&prkKey, info)
			prk := hkdfExtract(salt, ikm[:])
			hkdfExpand32(&prk, []byte(cekInfo))
			hkdfExpand32(&prk, []byte(nonceInfo))
		}
	})
}
