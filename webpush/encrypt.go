package webpush

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/rand"
	"encoding/binary"
	"fmt"
)

const (
	// RecordSize is the RFC 8188 record size written in every message header.
	RecordSize = 4096

	saltLen   = 16
	tagLen    = 16
	headerLen = saltLen + 4 + 1 + pointLen // salt || rs || idlen || keyid(as_public)

	// MaxPayloadSize is the longest payload that fits one 4096-byte record
	// with its 86-byte header, padding delimiter and tag (RFC 8291 section 4).
	MaxPayloadSize = RecordSize - headerLen - tagLen - 1

	paddingDelimiter = 0x02 // last (and only) record, no further padding

	cekInfo   = "Content-Encoding: aes128gcm\x00"
	nonceInfo = "Content-Encoding: nonce\x00"
)

// Encrypt returns the aes128gcm body of a push message carrying payload to t:
// a fresh ephemeral P-256 key and 16-byte salt per call, one record, record
// size 4096, the padding delimiter and no further padding. The result is one
// allocation of len(payload)+103 bytes (header 86, delimiter 1, tag 16).
func Encrypt(t *Target, payload []byte) ([]byte, error) {
	if len(payload) > MaxPayloadSize {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrPayloadTooLarge, len(payload), MaxPayloadSize)
	}
	ephemeral, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating ephemeral key: %w", err)
	}
	var salt [saltLen]byte
	rand.Read(salt[:]) // never fails; crashes the program if it cannot read
	return encrypt(t, payload, ephemeral, &salt)
}

// encrypt is Encrypt with the ephemeral key and salt chosen by the caller,
// so tests can reproduce the RFC 8291 example. Production code must go
// through Encrypt.
func encrypt(t *Target, payload []byte, ephemeral *ecdh.PrivateKey, salt *[saltLen]byte) ([]byte, error) {
	secret, err := ephemeral.ECDH(t.uaPublic)
	if err != nil {
		return nil, fmt.Errorf("computing ECDH secret: %w", err)
	}
	asPublic := ephemeral.PublicKey().Bytes()

	// RFC 8291 section 3.4: IKM from the ECDH secret and the auth secret,
	// then RFC 8188 section 2.2: CEK and NONCE from IKM and the salt.
	keyInfo := t.keyInfo
	copy(keyInfo[keyInfoASPublicAt:], asPublic)
	prkKey := hkdfExtract(t.auth[:], secret)
	ikm := hkdfExpand32(&prkKey, keyInfo[:])
	prk := hkdfExtract(salt[:], ikm[:])
	cek := hkdfExpand32(&prk, []byte(cekInfo))
	nonce := hkdfExpand32(&prk, []byte(nonceInfo))

	block, err := aes.NewCipher(cek[:16])
	if err != nil {
		return nil, fmt.Errorf("creating AES cipher: %w", err)
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("creating GCM: %w", err)
	}

	// Header, then the plaintext record sealed in place behind it.
	out := make([]byte, headerLen+len(payload)+1+tagLen)
	copy(out, salt[:])
	binary.BigEndian.PutUint32(out[saltLen:], RecordSize)
	out[saltLen+4] = pointLen
	copy(out[saltLen+5:], asPublic)
	record := out[headerLen : headerLen+len(payload)+1]
	copy(record, payload)
	record[len(payload)] = paddingDelimiter
	gcm.Seal(record[:0], nonce[:12], record, nil)
	return out, nil
}
