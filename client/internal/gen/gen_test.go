package gen

import (
	"strings"
	"testing"
)

func TestGoName(t *testing.T) {
	for in, want := range map[string]string{
		"externalIdHash":        "ExternalIDHash",
		"created_at":            "CreatedAt",
		"Idempotency-Key":       "IdempotencyKey",
		"ctr":                   "CTR",
		"segmentIds":            "SegmentIDs",
		"listWebhookDeliveries": "ListWebhookDeliveries",
		"utm_source":            "UTMSource",
		"p256dh":                "P256dh",
		"ok":                    "OK",
	} {
		if got := goName(in); got != want {
			t.Errorf("goName(%q) = %q, want %q", in, got, want)
		}
	}
	if got := varName("deliveryId"); got != "deliveryID" {
		t.Errorf("varName(deliveryId) = %q", got)
	}
}

// The rules of the package comment, on a small document.
func TestGenerateRules(t *testing.T) {
	spec := `{"paths":{"/api/v1/things/{thingId}":{"put":{"operationId":"putThing","summary":"Put a thing","security":[{"apiKey":[]}],
	  "parameters":[{"name":"thingId","in":"path","required":true,"schema":{"type":"string"}},{"name":"dryRun","in":"query","schema":{"type":"boolean"}},{"$ref":"#/components/parameters/ProjectIdQuery"}],
	  "requestBody":{"required":true,"content":{"application/json":{"schema":{"$ref":"#/components/schemas/Thing"}}}},
	  "responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"type":"object","required":["thing"],"properties":{"thing":{"$ref":"#/components/schemas/Thing"}}}}}}}},
	  "delete":{"operationId":"adminOnly","security":[{"adminToken":[]}],"responses":{"204":{"description":"gone"}}}}},
	 "components":{"parameters":{"ProjectIdQuery":{"name":"projectId","in":"query"}},"schemas":{"Thing":{"type":"object","required":["name"],"properties":{
	  "name":{"type":"string"},"count":{"type":["integer","null"]},"tags":{"type":"array","items":{"type":"string"}},
	  "meta":{"type":"object"},"either":{"oneOf":[{"type":"string"},{"type":"number"}]},"maybe":{"oneOf":[{"$ref":"#/components/schemas/Other"},{"type":"null"}]},
	  "inner":{"type":"object","properties":{"x":{"type":"number"}}}}},"Other":{"type":"object","properties":{"y":{"type":"boolean"}}}}}}`
	src, err := Generate([]byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	got := string(src)
	for _, want := range []string{
		"const Operations = 1\n",
		"Count  *int64          `json:\"count,omitempty\"`",
		"Either json.RawMessage `json:\"either,omitempty\"`",
		"Inner  *ThingInner     `json:\"inner,omitempty\"`",
		"Maybe  *Other          `json:\"maybe,omitempty\"`",
		"Meta   map[string]any  `json:\"meta,omitempty\"`",
		"Name   string          `json:\"name\"`",
		"Tags   []string        `json:\"tags,omitempty\"`",
		"type PutThingParams struct {\n\tDryRun bool\n}",
		"func (c *Client) PutThing(ctx context.Context, thingID string, body Thing, params *PutThingParams) (*PutThingResponse, error) {",
		`Path: "/things/" + url.PathEscape(thingID)`,
		"Thing Thing `json:\"thing\"`",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in\n%s", want, got)
		}
	}
	if strings.Contains(got, "AdminOnly") || strings.Contains(got, "ProjectID") {
		t.Errorf("an admin operation or the session's projectId in\n%s", got)
	}
}
