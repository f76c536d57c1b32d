package pusher

import (
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/wire"
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
//	  bool browser_languages = 5;
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
//	  string browser_language = 12;
//	}
//	message Tag { string key = 1; string value = 2; }
//
// language is the subscriber's (a person's), browser_language the
// endpoint's (store.Endpoint's Language, the translation a push takes).
// A fan-out node from before endpoints had a language of their own sends
// neither browser_languages nor browser_language: its batches' browsers
// take their person's language.
//
// A field the pusher starts using must be added here, or a cluster's
// pushers will not see it (TestBatchWireCarriesWhatPushingReads).
// Unknown fields are skipped, so a field can be added before every node
// knows it.

// batchContentType is the media type of an encoded batch.
const batchContentType = "application/x-protobuf"

// encodeBatch appends b's encoding to dst.
func encodeBatch(dst []byte, b Batch) []byte {
	dst = slices.Grow(dst, 100+300*len(b.Recipients))       // a recipient takes about 250 bytes
	dst = protowire.AppendTag(dst, 5, protowire.VarintType) // browser_languages
	dst = protowire.AppendVarint(dst, 1)
	dst = wire.AppendString(dst, 1, b.NotificationID)
	dst = wire.AppendString(dst, 2, b.WebsiteID)
	dst = wire.AppendString(dst, 3, b.Winner)
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
		dst = wire.AppendString(dst, protowire.Number(i+1), v)
	}
	for k, v := range s.Tags {
		dst = protowire.AppendTag(dst, 11, protowire.BytesType)
		dst = protowire.AppendVarint(dst, uint64(wire.StringSize(1, k)+wire.StringSize(2, v)))
		dst = wire.AppendString(wire.AppendString(dst, 1, k), 2, v)
	}
	return wire.AppendString(dst, 12, e.Language)
}

// maxBatchRecipients bounds the recipients of a batch a pusher takes: a
// fan-out sends BatchSize (500 by default).
const maxBatchRecipients = 10_000

// decodeBatch reads an encoded batch. The recipients' strings share one
// copy of data.
func decodeBatch(data []byte) (Batch, error) {
	d := wire.NewDecoder(data)
	var b Batch
	b.Recipients = make([]store.Recipient, 0, min(len(data)/250, maxBatchRecipients))
	browserLanguages := false
	err := d.Fields(data, 0, func(num protowire.Number, v []byte, at int) error {
		switch num {
		case 1:
			b.NotificationID = d.Str(v, at)
		case 2:
			b.WebsiteID = d.Str(v, at)
		case 3:
			b.Winner = d.Str(v, at)
		case 4:
			if len(b.Recipients) == maxBatchRecipients {
				return fmt.Errorf("more than %d recipients", maxBatchRecipients)
			}
			r, err := recipient(d, v, at)
			if err != nil {
				return err
			}
			b.Recipients = append(b.Recipients, r)
		}
		return nil
	}, func(num protowire.Number, v uint64) error {
		if num == 5 {
			browserLanguages = v != 0
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
		r := &b.Recipients[i]
		r.Endpoint.WebsiteID = b.WebsiteID
		r.Subscriber.WebsiteID = b.WebsiteID
		if !browserLanguages { // an older fan-out's
			r.Endpoint.Language = r.Subscriber.Language
		}
	}
	return b, nil
}

// recipient reads a Recipient message found at offset base of d.All.
func recipient(d wire.Decoder, data []byte, base int) (store.Recipient, error) {
	var r store.Recipient
	e, s := &r.Endpoint, &r.Subscriber
	strs := [...]*string{&e.ID, &e.URL, &e.P256dh, &e.Auth, &e.Device, &s.ID, &s.ExternalID, &s.Country, &s.Language, &s.Timezone}
	err := d.Fields(data, base, func(num protowire.Number, v []byte, at int) error {
		switch {
		case int(num) <= len(strs):
			*strs[num-1] = d.Str(v, at)
		case num == 12:
			e.Language = d.Str(v, at)
		case num == 11:
			var k, val string
			err := d.Fields(v, at, func(num protowire.Number, v []byte, at int) error {
				switch num {
				case 1:
					k = d.Str(v, at)
				case 2:
					val = d.Str(v, at)
				}
				return nil
			}, nil)
			if err != nil {
				return err
			}
			if s.Tags == nil {
				s.Tags = map[string]string{}
			}
			s.Tags[k] = val
		}
		return nil
	}, nil)
	e.SubscriberID = s.ID
	return r, err
}
