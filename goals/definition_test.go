package goals

import (
	"errors"
	"testing"
)

func ptr[T any](v T) *T { return &v }

// TestApply: a PUT's event replaces a tag and a tag an event; the window
// and name stay unless named; a refusal names its code.
func TestApply(t *testing.T) {
	d := New()
	if err := d.Apply(Body{Name: ptr(" Bought "), Event: ptr(" purchase ")}); err != nil {
		t.Fatal(err)
	}
	if d != (Definition{Name: "Bought", Event: "purchase", WindowHours: DefaultWindow}) {
		t.Fatalf("created %+v", d)
	}
	if err := d.Apply(Body{Tag: &Tag{Name: ptr("plan"), Value: ptr("vip")}, WindowHours: ptr(MaxWindow)}); err != nil {
		t.Fatal(err)
	}
	if d != (Definition{Name: "Bought", TagName: "plan", TagValue: "vip", WindowHours: MaxWindow}) {
		t.Fatalf("as a tag goal %+v", d)
	}
	if err := d.Apply(Body{Event: ptr("signup")}); err != nil || d.TagName != "" || d.TagValue != "" || d.Event != "signup" {
		t.Fatalf("back to an event: %+v %v", d, err)
	}
	for _, c := range []struct {
		body Body
		code string
	}{
		{Body{Event: ptr("a"), Tag: &Tag{Name: ptr("a"), Value: ptr("")}}, CodeInvalidGoal},
		{Body{WindowHours: ptr(0)}, CodeInvalidWindow},
		{Body{Tag: &Tag{Name: ptr("rb_x"), Value: ptr("")}}, CodeReservedLabel},
		{Body{Name: ptr("")}, CodeNameRequired},
	} {
		e := d
		var ge *Error
		if err := e.Apply(c.body); !errors.As(err, &ge) || ge.Code != c.code {
			t.Fatalf("%+v: %v, want %s", c.body, err, c.code)
		}
	}
}
