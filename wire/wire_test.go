package wire

import (
	"reflect"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// Fields hands over strings as substrings of All at their offsets and
// varints when asked, skips other wire types and empty defaults, and
// refuses a message cut anywhere inside a field.
func TestFields(t *testing.T) {
	msg := AppendString(nil, 1, "abc")
	msg = AppendString(msg, 2, "") // proto3 default: not written
	msg = protowire.AppendTag(msg, 3, protowire.Fixed32Type)
	msg = protowire.AppendFixed32(msg, 7)
	msg = AppendVarint(msg, 4, 300)
	msg = AppendVarint(msg, 5, 0) // not written
	msg = AppendString(msg, 6, "xyz")
	if got, want := len(msg), StringSize(1, "abc")+5+3+StringSize(6, "xyz"); got != want {
		t.Fatalf("message of %d bytes, want %d", got, want)
	}
	read := func(varints bool) (strs []string, nums []uint64, err error) {
		d := NewDecoder(msg)
		var varint func(protowire.Number, uint64) error
		if varints {
			varint = func(num protowire.Number, v uint64) error { nums = append(nums, uint64(num), v); return nil }
		}
		err = d.Fields([]byte(d.All), 0, func(num protowire.Number, v []byte, at int) error {
			strs = append(strs, d.Str(v, at))
			return nil
		}, varint)
		return strs, nums, err
	}
	strs, nums, err := read(true)
	if err != nil || !reflect.DeepEqual(strs, []string{"abc", "xyz"}) || !reflect.DeepEqual(nums, []uint64{4, 300}) {
		t.Fatalf("Fields = %q, %v, %v", strs, nums, err)
	}
	if strs, nums, err = read(false); err != nil || len(strs) != 2 || nums != nil {
		t.Fatalf("Fields without a varint callback = %q, %v, %v", strs, nums, err)
	}
	for cut := 1; cut < len(msg); cut++ {
		if cut == StringSize(1, "abc") || cut == StringSize(1, "abc")+5 || cut == StringSize(1, "abc")+8 {
			continue // between fields
		}
		d := NewDecoder(msg[:cut])
		err := d.Fields([]byte(d.All), 0, func(protowire.Number, []byte, int) error { return nil }, func(protowire.Number, uint64) error { return nil })
		if err == nil {
			t.Errorf("a message cut at %d of %d bytes was read", cut, len(msg))
		}
	}
}
