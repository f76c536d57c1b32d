package webpush

import "crypto/sha256"

// The RFC 8291 key schedule is five HMAC-SHA256 computations over short
// inputs with keys of at most 32 bytes. crypto/hkdf allocates about 30
// objects for them (an hmac.Hash with two digests per call); these helpers
// compute the same values with sha256.Sum256 on stack buffers and allocate
// nothing. TestKDFMatchesCryptoHKDF checks them against crypto/hkdf and
// BenchmarkKDF compares the two.

const (
	hmacBlockLen = 64
	// hmacMaxMsgLen is the longest HMAC message used: key_info plus the
	// HKDF-Expand counter byte.
	hmacMaxMsgLen = keyInfoLen + 1
)

// hmacSHA256 returns HMAC-SHA256(key, msg) (RFC 2104) for a key of at most
// 64 bytes and a message of at most hmacMaxMsgLen bytes.
func hmacSHA256(key, msg []byte) [sha256.Size]byte {
	if len(key) > hmacBlockLen || len(msg) > hmacMaxMsgLen {
		panic("webpush: hmacSHA256 input too long")
	}
	var inner [hmacBlockLen + hmacMaxMsgLen]byte
	var outer [hmacBlockLen + sha256.Size]byte
	copy(inner[:], key)
	copy(outer[:], key)
	for i := range hmacBlockLen {
		inner[i] ^= 0x36
		outer[i] ^= 0x5c
	}
	copy(inner[hmacBlockLen:], msg)
	innerSum := sha256.Sum256(inner[:hmacBlockLen+len(msg)])
	copy(outer[hmacBlockLen:], innerSum[:])
	return sha256.Sum256(outer[:])
}

// hkdfExtract is HKDF-Extract(salt, ikm) with SHA-256 (RFC 5869 section 2.2).
func hkdfExtract(salt, ikm []byte) [sha256.Size]byte {
	return hmacSHA256(salt, ikm)
}

// hkdfExpand32 is HKDF-Expand(prk, info, L) for L <= 32: the first block,
// HMAC(prk, info || 0x01), of which the caller keeps L bytes.
func hkdfExpand32(prk *[sha256.Size]byte, info []byte) [sha256.Size]byte {
	var msg [hmacMaxMsgLen]byte
	n := copy(msg[:], info)
	msg[n] = 0x01
	return hmacSHA256(prk[:], msg[:n+1])
}
