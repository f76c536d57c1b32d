package pusher

import (
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/relaybell/relaybell/store"
)

// A batch travels from a fan-out node to a pusher node in protobuf's wire
// format, written and read here field by field (protowire): every push of
// a cluster crosses it, and JSON cost the pusher about 10 µs per recipient
// to decode (5% of its CPU), and the fan-out as much to encode. Only what
// a pusher uses travels: the message is
//
//	message Batch {
//	  string notification_id = 1;
//	  string website_id = 2;
//	  string winner = 3;
//	  repeated Recipient recipients = 4;
//	}
//	message Recipient {
//	  string endpoint_id = 1;
//	  string url = 2;
//	  string p256dh = 3;
//	  string auth = 4;
//	  string device = 5;
//	  string subscriber_id = 6;
//	  string external_id = 7;
//	  string country = 8;
//	  string language = 9;
//	  string timezone = 10;
//	  repeated Tag tags = 11;
//	}
//	message Tag { string key = 1; string value = 2; }
//
// A field the pusher starts using must be added here, or a cluster's
// pushers will not see it (TestBatchWireCarriesWhatPushingReads).
// Unknown fields are skipped, so a field can be added before every node
// knows it.

// batchContentType is the media type of an encoded batch.
const batchContentType = "application/x-protobuf"

// encodeBatch appends b's encoding to dst.
func encodeBatch(dst []byte, b Batch) []byte {
	dst = slices.Grow(dst, 100+300*len(b.Recipients)) // a recipient takes about 250 bytes
	dst = appendString(dst, 1, b.NotificationID)
	dst = appendString(dst, 2, b.WebsiteID)
	dst = appendString(dst, 3, b.Winner)
	var r []byte
	for i := range b.Recipients {
		r = encodeRecipient(r[:0], &b.Recipients[i])
		dst = protowire.AppendTag(dst, 4, protowire.BytesType)
		dst = protowire.AppendBytes(dst, r)
	}
	return dst
}

func encodeRecipient(dst []byte, r *store.Recipient) []byte {
	e, s := &r.Endpoint, &r.Subscriber
	for i, v := range [...]string{e.ID, e.URL, e.P256dh, e.Auth, e.Device, s.ID, s.ExternalID, s.Country, s.Language, s.Timezone} {
		dst = appendString(dst, protowire.Number(i+1), v)
	}
	for k, v := range s.Tags {
		dst = protowire.AppendTag(dst, 11, protowire.BytesType)
		dst = protowire.AppendVarint(dst, uint64(stringSize(1, k)+stringSize(2, v)))
		dst = appendString(appendString(dst, 1, k), 2, v)
	}
	return dst
}

// stringSize is what appendString appends.
func stringSize(num protowire.Number, v string) int {
	if v == "" {
		return 0
	}
	return protowire.SizeTag(num) + protowire.SizeBytes(len(v))
}

// appendString appends field num unless v is empty (proto3's default).
func appendString(dst []byte, num protowire.Number, v string) []byte {
	if v == "" {
		return dst
	}
	dst = protowire.AppendTag(dst, num, protowire.BytesType)
	return protowire.AppendString(dst, v)
}

// maxBatchRecipients bounds the recipients of a batch a pusher takes: a
// fan-out sends BatchSize (500 by default).
const maxBatchRecipients = 10_000

// decodeBatch reads an encoded batch. The recipients' strings share one
// copy of data.
func decodeBatch(data []byte) (Batch, error) {
	d := decoder{all: string(data)}
	var b Batch
	b.Recipients = make([]store.Recipient, 0, min(len(data)/250, maxBatchRecipients))
	err := d.fields(data, 0, func(num protowire.Number, v []byte, at int) error {
		switch num {
		case 1:
			b.NotificationID = d.str(v, at)
		case 2:
			b.WebsiteID = d.str(v, at)
		case 3:
			b.Winner = d.str(v, at)
		case 4:
			if len(b.Recipients) == maxBatchRecipients {
				return fmt.Errorf("more than %d recipients", maxBatchRecipients)
			}
			r, err := d.recipient(v, at)
			if err != nil {
				return err
			}
			b.Recipients = append(b.Recipients, r)
		}
		return nil
	})
	if err != nil {
		return Batch{}, fmt.Errorf("decoding batch: %w", err)
	}
	// These outlive the batch as keys of the pusher's caches: copies, so
	// they do not hold the whole body.
	b.NotificationID, b.WebsiteID, b.Winner = strings.Clone(b.NotificationID), strings.Clone(b.WebsiteID), strings.Clone(b.Winner)
	for i := range b.Recipients {
		b.Recipients[i].Endpoint.WebsiteID = b.WebsiteID
		b.Recipients[i].Subscriber.WebsiteID = b.WebsiteID
	}
	return b, nil
}

// decoder reads nested messages of one buffer, turning their strings into
// substrings of all (one allocation for the whole batch).
type decoder struct {
	all string
}

// str is v, found at offset at of all, as a substring of all.
func (d decoder) str(v []byte, at int) string { return d.all[at : at+len(v)] }

// recipient reads a Recipient message found at offset base of all.
func (d decoder) recipient(data []byte, base int) (store.Recipient, error) {
	var r store.Recipient
	e, s := &r.Endpoint, &r.Subscriber
	strs := [...]*string{&e.ID, &e.URL, &e.P256dh, &e.Auth, &e.Device, &s.ID, &s.ExternalID, &s.Country, &s.Language, &s.Timezone}
	err := d.fields(data, base, func(num protowire.Number, v []byte, at int) error {
		switch {
		case int(num) <= len(strs):
			*strs[num-1] = d.str(v, at)
		case num == 11:
			var k, val string
			err := d.fields(v, at, func(num protowire.Number, v []byte, at int) error {
				switch num {
				case 1:
					k = d.str(v, at)
				case 2:
					val = d.str(v, at)
				}
				return nil
			})
			if err != nil {
				return err
			}
			if s.Tags == nil {
				s.Tags = map[string]string{}
			}
			s.Tags[k] = val
		}
		return nil
	})
	e.SubscriberID = s.ID
	return r, err
}

// fields calls f with each length-delimited field of the message data,
// found at offset base of all, and the value's offset in all. Fields of
// other wire types are skipped (none is defined); a truncated field is an
// error.
func (d decoder) fields(data []byte, base int, f func(num protowire.Number, v []byte, at int) error) error {
	off := 0
	for off < len(data) {
		num, typ, n := protowire.ConsumeTag(data[off:])
		if n < 0 {
			return protowire.ParseError(n)
		}
		off += n
		if typ != protowire.BytesType {
			if n = protowire.ConsumeFieldValue(num, typ, data[off:]); n < 0 {
				return protowire.ParseError(n)
			}
			off += n
			continue
		}
		v, n := protowire.ConsumeBytes(data[off:])
		if n < 0 {
			return protowire.ParseError(n)
		}
		if err := f(num, v, base+off+n-len(v)); err != nil {
			return err
		}
		off += n
	}
	return nil
}
