package api

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/relaybell/relaybell/notification"
)

// BenchmarkDecodeJSON: decodeJSON (UTF-8 check, checkMembers, decoding)
// against encoding/json's decoding alone, in the same run, for the bodies
// that come most often: a browser's ping and registration, and a send.
func BenchmarkDecodeJSON(b *testing.B) {
	bodies := []struct {
		name string
		body string
		v    func() any
	}{
		{"ping", `{"notificationId":"6f1c2a9e-0000-4000-8000-000000000001","endpointId":"6f1c2a9e-0000-4000-8000-000000000002"}`,
			func() any { return new(pingRequest) }},
		{"subscription", `{"endpoint":"https://fcm.googleapis.com/fcm/send/dGVzdC1lbmRwb2ludC1pZC0wMTIzNDU2Nzg5","keys":{"p256dh":"BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUbVlUls0VJXg7A8u-Ts1XbjhazAkj7I99e8QcYP7DkM","auth":"tBHItJI5svbpez7KI4CCXg"},"externalId":"user-42","language":"en-US","timezone":"Europe/Paris","userAgent":"Mozilla/5.0 (X11; Linux x86_64) Chrome/124.0","url":"https://shop.example/","topics":["news","deals"]}`,
			func() any { return new(subscriptionRequest) }},
		{"send", `{"title":"Spring sale","body":"20% off today","url":"https://shop.example/spring","actions":[{"title":"Buy"},{"title":"Later"}],"filters":{"rules":[{"field":"country","value":"DE"},{"field":"tag:plan","op":"in","value":["pro","team"]}]},"ttl":3600}`,
			func() any { return new(notification.Request) }},
	}
	for _, c := range bodies {
		body := []byte(c.body)
		b.Run(c.name+"/decodeJSON", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := decodeJSON(body, c.v(), strict); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/encoding-json", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				dec := json.NewDecoder(bytes.NewReader(body))
				dec.DisallowUnknownFields()
				if err := dec.Decode(c.v()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
