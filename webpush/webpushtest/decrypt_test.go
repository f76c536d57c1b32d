package webpushtest

import (
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

func TestDecryptRFC8291Example(t *testing.T) {
	raw, err := os.ReadFile("../testdata/rfc8291_example.json")
	if err != nil {
		t.Fatal(err)
	}
	var ex struct {
		Plaintext  string `json:"plaintext"`
		UAPrivate  string `json:"ua_private"`
		AuthSecret string `json:"auth_secret"`
		Body       string `json:"body"`
	}
	if err := json.Unmarshal(raw, &ex); err != nil {
		t.Fatal(err)
	}
	d := func(s string) []byte {
		b, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	priv, err := ecdh.P256().NewPrivateKey(d(ex.UAPrivate))
	if err != nil {
		t.Fatal(err)
	}
	got, err := decrypt(d(ex.Body), priv, d(ex.AuthSecret))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != ex.Plaintext {
		t.Errorf("decrypted %q, want %q", got, ex.Plaintext)
	}

	body := d(ex.Body)
	for _, tt := range []struct {
		name string
		edit func([]byte) []byte
		want string
	}{
		{"short", func(b []byte) []byte { return b[:20] }, "shorter than the aes128gcm header"},
		{"no records", func(b []byte) []byte { return b[:86] }, "no records"},
		{"small rs", func(b []byte) []byte { b[18], b[19] = 0, 17; return b }, "record size"},
		{"keyid length", func(b []byte) []byte { b[20] = 64; return b }, "keyid"},
		{"keyid off curve", func(b []byte) []byte { b[30] ^= 1; return b }, "not a P-256 point"},
		{"tag", func(b []byte) []byte { b[len(b)-1] ^= 1; return b }, "message authentication failed"},
		{"two records", func(b []byte) []byte { b[18], b[19] = 0, 30; return b }, "record 0"},
	} {
		_, err := decrypt(tt.edit(append([]byte(nil), body...)), priv, d(ex.AuthSecret))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want one containing %q", tt.name, err, tt.want)
		}
	}
}

func FuzzDecrypt(f *testing.F) {
	priv, _ := ecdh.P256().GenerateKey(rand.Reader)
	auth := make([]byte, 16)
	f.Add([]byte{})
	f.Add(make([]byte, 86))
	f.Add(append(append(make([]byte, 16), 0, 0, 0, 18, 65), priv.PublicKey().Bytes()...))
	body, _ := base64.RawURLEncoding.DecodeString("DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN")
	f.Add(body)
	f.Fuzz(func(t *testing.T, body []byte) {
		decrypt(body, priv, auth)
	})
}

func FuzzVerifyVAPID(f *testing.F) {
	key := make([]byte, 65)
	f.Add("vapid t=a.b.c, k=BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8")
	f.Add("vapid t=eyJhbGciOiJFUzI1NiJ9.e30.AAAA,k=")
	f.Add("vapid ,,,=,t==,k=\"\"")
	f.Add("")
	f.Fuzz(func(t *testing.T, header string) {
		if _, err := verifyVAPID(header, key, "https://push.example.net", time.Now()); err == nil {
			t.Fatalf("header %q verified", header)
		}
	})
}
