package signature

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// header is a parsed HeaderWebhookSignature value.
type header struct {
	ts   string   // the t value as received: the text the HMAC covers
	unix int64    // ts as unix seconds
	v1   [][]byte // every v1 value, decoded; 32 bytes each
}

// parseHeader reads a HeaderWebhookSignature value, "t=<unix
// seconds>,v1=<hex>", by the rules Verify documents (rule 2 of spec 6.3).
// Every error wraps ErrMalformed and never quotes the input.
func parseHeader(value string) (header, error) {
	var h header
	if strings.TrimSpace(value) == "" {
		return h, fmt.Errorf("%w: empty", ErrMalformed)
	}
	seenT := false
	for i, el := range strings.Split(value, ",") {
		el = strings.Trim(el, " \t")
		if el == "" {
			continue
		}
		key, val, ok := strings.Cut(el, "=")
		if !ok || key == "" {
			return header{}, fmt.Errorf("%w: element %d is not key=value", ErrMalformed, i+1)
		}
		switch key {
		case "t":
			if seenT {
				return header{}, fmt.Errorf("%w: t given more than once", ErrMalformed)
			}
			seenT = true
			unix, err := parseUnix(val)
			if err != nil {
				return header{}, err
			}
			h.ts, h.unix = val, unix
		case "v1":
			if len(val) != 2*32 {
				return header{}, fmt.Errorf("%w: v1 is %d characters, want 64 hex digits", ErrMalformed, len(val))
			}
			sig, err := hex.DecodeString(val)
			if err != nil {
				return header{}, fmt.Errorf("%w: v1 is not hex", ErrMalformed)
			}
			h.v1 = append(h.v1, sig)
		}
	}
	if !seenT {
		return header{}, fmt.Errorf("%w: no t", ErrMalformed)
	}
	if len(h.v1) == 0 {
		return header{}, fmt.Errorf("%w: no v1", ErrMalformed)
	}
	return h, nil
}

// parseUnix reads unix seconds written as decimal digits only: no sign, no
// spaces, no fraction.
func parseUnix(s string) (int64, error) {
	if s == "" {
		return 0, fmt.Errorf("%w: t is empty", ErrMalformed)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("%w: t is not decimal unix seconds", ErrMalformed)
		}
	}
	unix, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: t is out of range", ErrMalformed)
	}
	return unix, nil
}
