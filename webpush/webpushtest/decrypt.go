package webpushtest

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
)

// decrypt opens an RFC 8188 aes128gcm body with RFC 8291 keying, as a user
// agent does: written apart from the webpush package's encryptor, from the
// RFCs, so that a mistake in one is not mirrored in the other. It accepts
// any record size and any number of records.
func decrypt(body []byte, uaPrivate *ecdh.PrivateKey, authSecret []byte) ([]byte, error) {
	// Header: salt (16) | rs (uint32) | idlen (1) | keyid (idlen).
	if len(body) < 21 {
		return nil, errors.New("body shorter than the aes128gcm header")
	}
	salt := body[:16]
	rs := binary.BigEndian.Uint32(body[16:20])
	idlen := int(body[20])
	if rs < 18 {
		return nil, fmt.Errorf("record size %d is below 18", rs)
	}
	if idlen != 65 {
		return nil, fmt.Errorf("keyid is %d bytes, want a 65-byte P-256 point", idlen)
	}
	if len(body) < 21+idlen {
		return nil, errors.New("body shorter than its keyid")
	}
	asPublicBytes := body[21 : 21+idlen]
	records := body[21+idlen:]

	asPublic, err := ecdh.P256().NewPublicKey(asPublicBytes)
	if err != nil {
		return nil, fmt.Errorf("keyid is not a P-256 point: %w", err)
	}
	ecdhSecret, err := uaPrivate.ECDH(asPublic)
	if err != nil {
		return nil, fmt.Errorf("ECDH: %w", err)
	}

	// RFC 8291 section 3.4.
	keyInfo := "WebPush: info\x00" + string(uaPrivate.PublicKey().Bytes()) + string(asPublicBytes)
	ikm, err := hkdf.Key(sha256.New, ecdhSecret, authSecret, keyInfo, 32)
	if err != nil {
		return nil, err
	}
	// RFC 8188 section 2.2 and 2.3.
	cek, err := hkdf.Key(sha256.New, ikm, salt, "Content-Encoding: aes128gcm\x00", 16)
	if err != nil {
		return nil, err
	}
	baseNonce, err := hkdf.Key(sha256.New, ikm, salt, "Content-Encoding: nonce\x00", 12)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(cek)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}

	if len(records) == 0 {
		return nil, errors.New("no records")
	}
	var plaintext []byte
	for seq := uint64(0); len(records) > 0; seq++ {
		n := min(int(min(rs, 1<<30)), len(records))
		record := records[:n]
		records = records[n:]
		last := len(records) == 0

		nonce := make([]byte, 12)
		copy(nonce, baseNonce)
		var seqBytes [8]byte
		binary.BigEndian.PutUint64(seqBytes[:], seq)
		for i := range seqBytes {
			nonce[4+i] ^= seqBytes[i]
		}
		opened, err := aead.Open(nil, nonce, record, nil)
		if err != nil {
			return nil, fmt.Errorf("record %d: %w", seq, err)
		}
		// Padding: the data, one delimiter (2 in the last record, 1 before),
		// then zeros.
		end := len(opened) - 1
		for end >= 0 && opened[end] == 0 {
			end--
		}
		switch {
		case end < 0:
			return nil, fmt.Errorf("record %d has no padding delimiter", seq)
		case last && opened[end] != 2:
			return nil, fmt.Errorf("last record ends with delimiter %d, want 2", opened[end])
		case !last && opened[end] != 1:
			return nil, fmt.Errorf("record %d ends with delimiter %d, want 1", seq, opened[end])
		}
		plaintext = append(plaintext, opened[:end]...)
	}
	return plaintext, nil
}
