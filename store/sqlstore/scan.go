package sqlstore

import (
	"encoding/json"
	"fmt"
	"time"
)

// The scanners read a column in the form either engine keeps it, so a query
// is scanned once: both drivers hand a sql.Scanner their value (pgx hands
// it the value database/sql would).

// timeDest scans a time into *t, UTC: unix milliseconds (SQLite) or a
// timestamptz (PostgreSQL). NULL leaves the zero time.
type timeDest struct{ t *time.Time }

func (d timeDest) Scan(v any) error {
	switch x := v.(type) {
	case nil:
		*d.t = time.Time{}
	case int64:
		*d.t = time.UnixMilli(x).UTC()
	case time.Time:
		*d.t = x.UTC()
	default:
		return fmt.Errorf("scanning a time: unexpected %T", v)
	}
	return nil
}

// timePtrDest scans a nullable time into **p.
type timePtrDest struct{ p **time.Time }

func (d timePtrDest) Scan(v any) error {
	if v == nil {
		*d.p = nil
		return nil
	}
	var t time.Time
	if err := (timeDest{&t}).Scan(v); err != nil {
		return err
	}
	*d.p = &t
	return nil
}

// textDest scans nullable text into *s ("" for NULL).
type textDest struct{ s *string }

func (d textDest) Scan(v any) error {
	switch x := v.(type) {
	case nil:
		*d.s = ""
	case string:
		*d.s = x
	case []byte:
		*d.s = string(x)
	default:
		return fmt.Errorf("scanning text: unexpected %T", v)
	}
	return nil
}

// jsonDest scans a JSON column (TEXT on SQLite, json or jsonb on
// PostgreSQL) into v; NULL or "" leaves v as it is.
type jsonDest struct{ v any }

func (d jsonDest) Scan(src any) error {
	var b []byte
	switch x := src.(type) {
	case nil:
		return nil
	case string:
		b = []byte(x)
	case []byte:
		b = x
	default:
		return fmt.Errorf("scanning JSON: unexpected %T", src)
	}
	if len(b) == 0 {
		return nil
	}
	return json.Unmarshal(b, d.v)
}

// rawJSONDest scans a JSON column into *b as it is stored (nil for NULL),
// for documents the store keeps as the API wrote them.
type rawJSONDest struct{ b *[]byte }

func (d rawJSONDest) Scan(src any) error {
	switch x := src.(type) {
	case nil:
		*d.b = nil
	case string:
		*d.b = []byte(x)
	case []byte:
		*d.b = append([]byte(nil), x...)
	default:
		return fmt.Errorf("scanning JSON: unexpected %T", src)
	}
	return nil
}
