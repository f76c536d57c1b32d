// Package wire writes and reads the messages cluster nodes exchange in
// protobuf's wire format, field by field with protowire and without
// generated code: the batches fan-out nodes send pushers (package pusher)
// and the analytics events nodes journal in Kafka (package analytics).
// Each message's schema is documented where it is encoded.
//
// A Decoder reads strings as substrings of one copy of the encoded
// message, so a decoded message costs one allocation for all its strings;
// they keep the whole message alive while any is referenced.
package wire

import "google.golang.org/protobuf/encoding/protowire"

// AppendString appends field num unless v is empty (proto3's default).
func AppendString(dst []byte, num protowire.Number, v string) []byte {
	if v == "" {
		return dst
	}
	dst = protowire.AppendTag(dst, num, protowire.BytesType)
	return protowire.AppendString(dst, v)
}

// StringSize is what AppendString appends.
func StringSize(num protowire.Number, v string) int {
	if v == "" {
		return 0
	}
	return protowire.SizeTag(num) + protowire.SizeBytes(len(v))
}

// AppendVarint appends field num unless v is 0 (proto3's default).
func AppendVarint(dst []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return dst
	}
	dst = protowire.AppendTag(dst, num, protowire.VarintType)
	return protowire.AppendVarint(dst, v)
}

// Decoder reads the nested messages of one encoded message, All.
type Decoder struct {
	All string
}

// NewDecoder copies data, the encoded message, once.
func NewDecoder(data []byte) Decoder { return Decoder{All: string(data)} }

// Str is v, found at offset at of All, as a substring of All.
func (d Decoder) Str(v []byte, at int) string { return d.All[at : at+len(v)] }

// Fields calls bytes with each length-delimited field of the message data,
// found at offset base of All, and the value's offset in All, and varint
// (when not nil) with each varint field. Fields of other wire types, and
// varints without a callback, are skipped; a truncated field is an error.
func (d Decoder) Fields(data []byte, base int, bytes func(num protowire.Number, v []byte, at int) error, varint func(num protowire.Number, v uint64) error) error {
	off := 0
	for off < len(data) {
		num, typ, n := protowire.ConsumeTag(data[off:])
		if n < 0 {
			return protowire.ParseError(n)
		}
		off += n
		switch {
		case typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(data[off:])
			if n < 0 {
				return protowire.ParseError(n)
			}
			if err := bytes(num, v, base+off+n-len(v)); err != nil {
				return err
			}
			off += n
		case typ == protowire.VarintType && varint != nil:
			v, n := protowire.ConsumeVarint(data[off:])
			if n < 0 {
				return protowire.ParseError(n)
			}
			if err := varint(num, v); err != nil {
				return err
			}
			off += n
		default:
			if n = protowire.ConsumeFieldValue(num, typ, data[off:]); n < 0 {
				return protowire.ParseError(n)
			}
			off += n
		}
	}
	return nil
}
