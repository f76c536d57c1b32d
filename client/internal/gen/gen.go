// Package gen writes client/api_gen.go from api/openapi.json: Go types and
// one Client method for every operation an API key can call (its security
// names apiKey). It uses the standard library only.
//
// Types, by schema:
//   - a component schema is a Go type of its name; an object inline in a
//     request, an answer or a member is a struct named after where it is
//     (<Operation>Request, <Operation>Response, <Parent><Member>,
//     <Parent><Member>Item for an array's elements);
//   - string, integer, number and boolean are string, int64, float64 and
//     bool (dates stay strings as the API writes them);
//   - allOf merges its parts into one struct; oneOf or anyOf of one schema
//     and null is that schema, nullable; any other oneOf or anyOf, and a
//     schema without a type, is json.RawMessage;
//   - an object without properties is map[string]any, or map[string]T
//     when additionalProperties is a schema T;
//   - a member that is optional or nullable is a pointer (slices, maps and
//     json.RawMessage are not: nil stands for absent); optional members
//     are omitempty.
//
// SendRequest is written by hand (routes.go): its targeting members are
// sent whenever they are set, even empty, which omitempty cannot say.
//
// Methods are named from the operationId. Path parameters are positional
// strings, escaped; the request body follows (a pointer when it is
// optional, []byte for an application/octet-stream body); query and header
// parameters are an <Operation>Params struct (the session-only projectId
// and X-Project-Id are left out; Idempotency-Key goes to
// Request.IdempotencyKey). A JSON answer is decoded into its type; a text
// answer (CSV) is returned as []byte. An operation with a cursor query
// parameter whose name starts with "list" also gets an iterator over every
// page, named without the "list".
package gen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/format"
	"slices"
	"sort"
	"strings"
	"unicode"
)

// HandWritten are component schemas whose Go types are written by hand.
var HandWritten = map[string]bool{"SendRequest": true}

// apiPrefix is stripped from every path: Client.Do adds it.
const apiPrefix = "/api/v1"

type schema struct {
	Ref                  string             `json:"$ref"`
	Type                 json.RawMessage    `json:"type"`
	Description          string             `json:"description"`
	Properties           map[string]*schema `json:"properties"`
	Required             []string           `json:"required"`
	Items                *schema            `json:"items"`
	AdditionalProperties json.RawMessage    `json:"additionalProperties"`
	OneOf                []*schema          `json:"oneOf"`
	AnyOf                []*schema          `json:"anyOf"`
	AllOf                []*schema          `json:"allOf"`
	Const                json.RawMessage    `json:"const"`
}

type parameter struct {
	Ref      string  `json:"$ref"`
	Name     string  `json:"name"`
	In       string  `json:"in"`
	Required bool    `json:"required"`
	Schema   *schema `json:"schema"`
}

type media struct {
	Schema *schema `json:"schema"`
}

type operation struct {
	OperationID string                `json:"operationId"`
	Summary     string                `json:"summary"`
	Security    []map[string][]string `json:"security"`
	Parameters  []parameter           `json:"parameters"`
	RequestBody *struct {
		Required bool             `json:"required"`
		Content  map[string]media `json:"content"`
	} `json:"requestBody"`
	Responses map[string]struct {
		Content map[string]media `json:"content"`
	} `json:"responses"`
}

type document struct {
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Schemas    map[string]*schema   `json:"schemas"`
		Parameters map[string]parameter `json:"parameters"`
	} `json:"components"`
}

type generator struct {
	doc   document
	types map[string]string // Go type name -> declaration
	// origin says where a type comes from, for its doc comment when the
	// schema has no description.
	origin map[string]string
	seen   map[*schema]string
	out    bytes.Buffer
}

// Generate returns api_gen.go for the OpenAPI document spec.
func Generate(spec []byte) ([]byte, error) {
	g := &generator{types: map[string]string{}, seen: map[*schema]string{}, origin: map[string]string{}}
	if err := json.Unmarshal(spec, &g.doc); err != nil {
		return nil, fmt.Errorf("openapi.json: %w", err)
	}
	type op struct {
		method, path string
		op           operation
	}
	var ops []op
	for path, item := range g.doc.Paths {
		for method, raw := range item {
			if method == "parameters" {
				return nil, fmt.Errorf("%s: path-level parameters are not supported", path)
			}
			var o operation
			if err := json.Unmarshal(raw, &o); err != nil {
				return nil, fmt.Errorf("%s %s: %w", method, path, err)
			}
			if slices.ContainsFunc(o.Security, func(s map[string][]string) bool { _, ok := s["apiKey"]; return ok }) {
				ops = append(ops, op{strings.ToUpper(method), path, o})
			}
		}
	}
	sort.Slice(ops, func(i, j int) bool {
		if ops[i].path != ops[j].path {
			return ops[i].path < ops[j].path
		}
		return ops[i].method < ops[j].method
	})
	var methods bytes.Buffer
	for _, o := range ops {
		if err := g.operation(&methods, o.method, o.path, o.op); err != nil {
			return nil, fmt.Errorf("%s %s (%s): %w", o.method, o.path, o.op.OperationID, err)
		}
	}
	fmt.Fprintf(&g.out, "// Code generated by client/internal/gen from api/openapi.json; DO NOT EDIT.\n\n")
	fmt.Fprintf(&g.out, "package client\n\nimport (\n\t\"context\"\n\t\"encoding/json\"\n\t\"iter\"\n\t\"net/http\"\n\t\"net/url\"\n\t\"strconv\"\n)\n\n")
	fmt.Fprintf(&g.out, "// The imports stay used whatever the document holds.\nvar (\n\t_ = json.RawMessage(nil)\n\t_ = strconv.Itoa\n\t_ iter.Seq[int]\n)\n\n")
	fmt.Fprintf(&g.out, "// Operations is the number of API-key operations these methods cover.\nconst Operations = %d\n\n", len(ops))
	names := make([]string, 0, len(g.types))
	for n := range g.types {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		g.out.WriteString(g.types[n])
	}
	g.out.Write(methods.Bytes())
	src, err := format.Source(g.out.Bytes())
	if err != nil {
		return g.out.Bytes(), fmt.Errorf("gofmt: %w", err)
	}
	return src, nil
}

// typeNames parses a schema's type, a string or a list of strings.
func (s *schema) typeNames() (names []string, nullable bool) {
	if len(s.Type) == 0 {
		return nil, false
	}
	var one string
	if json.Unmarshal(s.Type, &one) == nil {
		names = []string{one}
	} else {
		_ = json.Unmarshal(s.Type, &names)
	}
	var rest []string
	for _, n := range names {
		if n == "null" {
			nullable = true
		} else {
			rest = append(rest, n)
		}
	}
	return rest, nullable
}

func isNull(s *schema) bool {
	names, nullable := s.typeNames()
	return nullable && len(names) == 0 && s.Ref == ""
}

func refName(ref string) (string, error) {
	const prefix = "#/components/schemas/"
	if !strings.HasPrefix(ref, prefix) {
		return "", fmt.Errorf("unsupported $ref %q", ref)
	}
	return strings.TrimPrefix(ref, prefix), nil
}

// goType is the Go type of s; name names a struct s may need. nullable
// says null is allowed.
func (g *generator) goType(s *schema, name string) (typ string, nullable bool, err error) {
	if s == nil {
		return "json.RawMessage", false, nil
	}
	if s.Ref != "" {
		n, err := refName(s.Ref)
		if err != nil {
			return "", false, err
		}
		c, ok := g.doc.Components.Schemas[n]
		if !ok {
			return "", false, fmt.Errorf("no schema %s", n)
		}
		if HandWritten[n] {
			return n, false, nil
		}
		if _, done := g.types[n]; !done {
			g.types[n] = "" // placeholder against cycles
			g.origin[n] = "is the schema " + n + " of api/openapi.json."
			t, _, err := g.goType(c, n)
			if err != nil {
				return "", false, err
			}
			if t != n { // not a struct: an alias
				g.types[n] = fmt.Sprintf("%s// %s is the schema %s.\ntype %s = %s\n\n", comment(c.Description, ""), n, n, n, t)
			}
		}
		return n, false, nil
	}
	if alts := append(append([]*schema(nil), s.OneOf...), s.AnyOf...); len(alts) > 0 {
		var rest []*schema
		for _, a := range alts {
			if isNull(a) {
				nullable = true
			} else {
				rest = append(rest, a)
			}
		}
		if len(rest) == 1 {
			t, n, err := g.goType(rest[0], name)
			return t, n || nullable, err
		}
		return "json.RawMessage", false, nil
	}
	if len(s.AllOf) > 0 {
		merged := &schema{Description: s.Description, Properties: map[string]*schema{}, AllOf: s.AllOf}
		for _, part := range s.AllOf {
			for part.Ref != "" {
				n, err := refName(part.Ref)
				if err != nil {
					return "", false, err
				}
				part = g.doc.Components.Schemas[n]
				if part == nil {
					return "", false, fmt.Errorf("no schema %s", n)
				}
			}
			if len(part.Properties) == 0 {
				return "json.RawMessage", false, nil
			}
			for k, v := range part.Properties {
				merged.Properties[k] = v
			}
			merged.Required = append(merged.Required, part.Required...)
		}
		return g.structType(merged, name)
	}
	names, nullable := s.typeNames()
	if len(names) == 0 && len(s.Const) > 0 {
		var v any
		_ = json.Unmarshal(s.Const, &v)
		switch v.(type) {
		case bool:
			names = []string{"boolean"}
		case string:
			names = []string{"string"}
		case float64:
			names = []string{"number"}
		}
	}
	if len(names) == 0 && len(s.Properties) > 0 {
		names = []string{"object"}
	}
	if len(names) != 1 {
		return "json.RawMessage", false, nil
	}
	switch names[0] {
	case "string":
		return "string", nullable, nil
	case "integer":
		return "int64", nullable, nil
	case "number":
		return "float64", nullable, nil
	case "boolean":
		return "bool", nullable, nil
	case "array":
		g.origin[name+"Item"] = "is an element of " + g.what(name) + "."
		t, _, err := g.goType(s.Items, name+"Item")
		return "[]" + t, nullable, err
	case "object":
		if len(s.Properties) > 0 {
			t, _, err := g.structType(s, name)
			return t, nullable, err
		}
		if len(s.AdditionalProperties) > 0 && s.AdditionalProperties[0] == '{' {
			var ap schema
			if err := json.Unmarshal(s.AdditionalProperties, &ap); err != nil {
				return "", false, err
			}
			g.origin[name+"Value"] = "is a value of " + g.what(name) + "."
			t, _, err := g.goType(&ap, name+"Value")
			return "map[string]" + t, nullable, err
		}
		return "map[string]any", nullable, nil
	}
	return "json.RawMessage", false, nil
}

// what names the place a type name stands for: "the member m of T", or
// the name itself.
func (g *generator) what(name string) string {
	if o, ok := strings.CutPrefix(g.origin[name], "is "); ok {
		return strings.TrimSuffix(o, ".")
	}
	return name
}

// structType declares the struct name for s.
func (g *generator) structType(s *schema, name string) (string, bool, error) {
	if prev, ok := g.seen[s]; ok {
		return prev, false, nil
	}
	if decl, ok := g.types[name]; ok && decl != "" {
		return "", false, fmt.Errorf("type %s declared twice", name)
	}
	if c, ok := g.doc.Components.Schemas[name]; ok && c != s && !sameAllOf(c, s) {
		return "", false, fmt.Errorf("an inline type would take the schema name %s", name)
	}
	g.seen[s] = name
	g.types[name] = "" // reserved while the members are typed
	keys := make([]string, 0, len(s.Properties))
	for k := range s.Properties {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	if s.Description != "" {
		b.WriteString(comment(s.Description, ""))
	} else if o := g.origin[name]; o != "" {
		b.WriteString(comment(name+" "+o, ""))
	}
	fmt.Fprintf(&b, "type %s struct {\n", name)
	fields := map[string]string{}
	for _, k := range keys {
		p := s.Properties[k]
		field := goName(k)
		if other, dup := fields[field]; dup {
			return "", false, fmt.Errorf("%s: members %q and %q are both %s", name, other, k, field)
		}
		fields[field] = k
		g.origin[name+field] = fmt.Sprintf("is the member %s of %s.", k, name)
		t, nullable, err := g.goType(p, name+field)
		if err != nil {
			return "", false, fmt.Errorf("%s.%s: %w", name, k, err)
		}
		required := slices.Contains(s.Required, k)
		byRef := strings.HasPrefix(t, "[]") || strings.HasPrefix(t, "map[") || t == "json.RawMessage"
		if !byRef && (nullable || !required) {
			t = "*" + t
		}
		tag := k
		if !required {
			tag += ",omitempty"
		}
		b.WriteString(comment(p.Description, "\t"))
		fmt.Fprintf(&b, "\t%s %s `json:%q`\n", field, t, tag)
	}
	b.WriteString("}\n\n")
	g.types[name] = b.String()
	return name, false, nil
}

// sameAllOf: b is a's allOf merged.
func sameAllOf(a, b *schema) bool {
	return len(a.AllOf) > 0 && len(b.AllOf) == len(a.AllOf) && a.AllOf[0] == b.AllOf[0]
}

func (g *generator) param(p parameter) (parameter, bool, error) {
	if p.Ref != "" {
		n := strings.TrimPrefix(p.Ref, "#/components/parameters/")
		if n == "ProjectIdQuery" || n == "ProjectIdHeader" {
			return p, false, nil // a session's: an API key names its website
		}
		q, ok := g.doc.Components.Parameters[n]
		if !ok {
			return p, false, fmt.Errorf("no parameter %s", n)
		}
		p = q
	}
	return p, true, nil
}

func (g *generator) operation(w *bytes.Buffer, method, path string, o operation) error {
	if o.OperationID == "" {
		return fmt.Errorf("no operationId")
	}
	if !strings.HasPrefix(path, apiPrefix+"/") {
		return fmt.Errorf("path outside %s", apiPrefix)
	}
	opName := goName(o.OperationID)
	var (
		args        []string // the method's parameters after ctx
		pathExpr    []string
		query       []parameter
		idempotency bool
	)
	rest := strings.TrimPrefix(path, apiPrefix)
	for rest != "" {
		i := strings.Index(rest, "{")
		if i < 0 {
			pathExpr = append(pathExpr, fmt.Sprintf("%q", rest))
			break
		}
		j := strings.Index(rest, "}")
		if i > 0 {
			pathExpr = append(pathExpr, fmt.Sprintf("%q", rest[:i]))
		}
		v := varName(rest[i+1 : j])
		args = append(args, v+" string")
		pathExpr = append(pathExpr, "url.PathEscape("+v+")")
		rest = rest[j+1:]
	}
	for _, p := range o.Parameters {
		p, keep, err := g.param(p)
		if err != nil {
			return err
		}
		switch {
		case !keep || p.In == "path":
		case p.In == "query":
			query = append(query, p)
		case p.In == "header" && p.Name == "Idempotency-Key":
			idempotency = true
		default:
			return fmt.Errorf("unsupported parameter %s in %s", p.Name, p.In)
		}
	}
	var bodyLine string
	if rb := o.RequestBody; rb != nil {
		if m, ok := rb.Content["application/json"]; ok {
			g.origin[opName+"Request"] = "is the body of " + opName + "."
			t, _, err := g.goType(m.Schema, opName+"Request")
			if err != nil {
				return err
			}
			if rb.Required {
				args = append(args, "body "+t)
				bodyLine = "req.Body = body\n"
			} else {
				args = append(args, "body *"+t)
				bodyLine = "if body != nil {\nreq.Body = body\n}\n"
			}
		} else if _, ok := rb.Content["application/octet-stream"]; ok {
			args = append(args, "body []byte")
			bodyLine = "req.Body, req.ContentType = body, \"application/octet-stream\"\n"
		} else {
			return fmt.Errorf("no JSON or octet-stream request body")
		}
	}
	paramsType := opName + "Params"
	if len(query) > 0 || idempotency {
		args = append(args, "params *"+paramsType)
		g.params(paramsType, opName, query, idempotency)
	}
	// The answer: the first 2xx with content.
	codes := make([]string, 0, len(o.Responses))
	for c := range o.Responses {
		if strings.HasPrefix(c, "2") {
			codes = append(codes, c)
		}
	}
	sort.Strings(codes)
	var (
		outType   string
		respSchem *schema
	)
	for _, c := range codes {
		content := o.Responses[c].Content
		if len(content) == 0 {
			continue
		}
		if m, ok := content["application/json"]; ok {
			g.origin[opName+"Response"] = "is the answer of " + opName + "."
			t, _, err := g.goType(m.Schema, opName+"Response")
			if err != nil {
				return err
			}
			outType, respSchem = t, m.Schema
		} else {
			outType = "[]byte"
		}
		break
	}
	doc := fmt.Sprintf("%s calls %s %s", opName, method, strings.TrimPrefix(path, apiPrefix))
	if o.Summary != "" {
		doc += ": " + strings.TrimSpace(o.Summary)
	}
	w.WriteString(comment(doc, ""))
	result := "error"
	byValue := outType != "" && !g.isStruct(outType)
	switch {
	case byValue:
		result = "(" + outType + ", error)"
	case outType != "":
		result = "(*" + outType + ", error)"
	}
	fmt.Fprintf(w, "func (c *Client) %s(%s) %s {\n", opName, strings.Join(append([]string{"ctx context.Context"}, args...), ", "), result)
	fmt.Fprintf(w, "req := Request{Method: http.Method%s, Path: %s}\n", methodConst(method), strings.Join(pathExpr, " + "))
	w.WriteString(bodyLine)
	if len(query) > 0 || idempotency {
		w.WriteString("if params != nil {\n")
		if len(query) > 0 {
			w.WriteString("req.Query = params.query()\n")
		}
		if idempotency {
			w.WriteString("req.IdempotencyKey = params.IdempotencyKey\n")
		}
		w.WriteString("}\n")
	}
	switch {
	case outType == "":
		w.WriteString("return c.Do(ctx, req, nil)\n}\n\n")
	case byValue:
		fmt.Fprintf(w, "var out %s\nif err := c.Do(ctx, req, &out); err != nil {\nreturn nil, err\n}\nreturn out, nil\n}\n\n", outType)
	default:
		fmt.Fprintf(w, "var out %s\nif err := c.Do(ctx, req, &out); err != nil {\nreturn nil, err\n}\nreturn &out, nil\n}\n\n", outType)
	}
	if slices.ContainsFunc(query, func(p parameter) bool { return p.Name == "cursor" }) && strings.HasPrefix(opName, "List") && respSchem != nil {
		return g.iterator(w, opName, args, pathExpr, respSchem)
	}
	return nil
}

func (g *generator) isStruct(t string) bool {
	decl, ok := g.types[t]
	return ok && strings.Contains(decl, "type "+t+" struct") || HandWritten[t]
}

// iterator writes the every-page iterator of a cursor-paged list.
func (g *generator) iterator(w *bytes.Buffer, opName string, args, pathExpr []string, s *schema) error {
	for s.Ref != "" {
		n, err := refName(s.Ref)
		if err != nil {
			return err
		}
		s = g.doc.Components.Schemas[n]
	}
	if _, ok := s.Properties["nextCursor"]; !ok {
		return fmt.Errorf("a cursor parameter but no nextCursor")
	}
	var itemsKey string
	for k, p := range s.Properties {
		if names, _ := p.typeNames(); len(names) == 1 && names[0] == "array" {
			if itemsKey != "" {
				return fmt.Errorf("two arrays in a page: %s and %s", itemsKey, k)
			}
			itemsKey = k
		}
	}
	if itemsKey == "" {
		return fmt.Errorf("no array in a page")
	}
	outType, _, err := g.goType(s.Properties[itemsKey], "")
	if err != nil {
		return err
	}
	item := strings.TrimPrefix(outType, "[]")
	name := strings.TrimPrefix(opName, "List")
	w.WriteString(comment(fmt.Sprintf("%s iterates over every page of %s, following nextCursor (params.Cursor, if set, is the first page's). An error ends the iteration after being yielded once.", name, opName), ""))
	fmt.Fprintf(w, "func (c *Client) %s(%s) iter.Seq2[%s, error] {\n", name, strings.Join(append([]string{"ctx context.Context"}, args...), ", "), item)
	fmt.Fprintf(w, "return Pages[%s](ctx, c, %s, params.query(), %q)\n}\n\n", item, strings.Join(pathExpr, " + "), itemsKey)
	return nil
}

// params declares an operation's parameters struct and its query method.
func (g *generator) params(name, opName string, query []parameter, idempotency bool) {
	var b strings.Builder
	fmt.Fprintf(&b, "// %s are %s's parameters; zero values are not sent.\ntype %s struct {\n", name, opName, name)
	var q strings.Builder
	fmt.Fprintf(&q, "func (p *%s) query() url.Values {\nq := url.Values{}\nif p == nil {\nreturn q\n}\n", name)
	sort.Slice(query, func(i, j int) bool { return query[i].Name < query[j].Name })
	for _, p := range query {
		f := goName(p.Name)
		names, _ := (&schema{}).typeNames()
		if p.Schema != nil {
			names, _ = p.Schema.typeNames()
		}
		t := "string"
		if len(names) == 1 {
			switch names[0] {
			case "integer":
				t = "int"
			case "boolean":
				t = "bool"
			}
		}
		fmt.Fprintf(&b, "\t%s %s\n", f, t)
		switch t {
		case "int":
			fmt.Fprintf(&q, "if p.%s != 0 {\nq.Set(%q, strconv.Itoa(p.%s))\n}\n", f, p.Name, f)
		case "bool":
			fmt.Fprintf(&q, "if p.%s {\nq.Set(%q, \"true\")\n}\n", f, p.Name)
		default:
			fmt.Fprintf(&q, "if p.%s != \"\" {\nq.Set(%q, p.%s)\n}\n", f, p.Name, f)
		}
	}
	if idempotency {
		b.WriteString("\t// IdempotencyKey is sent as Idempotency-Key; with it the call is retried on 429 and 5xx.\n\tIdempotencyKey string\n")
	}
	b.WriteString("}\n\n")
	q.WriteString("return q\n}\n\n")
	if len(query) > 0 {
		b.WriteString(q.String())
	}
	g.types[name] = b.String()
}

func methodConst(m string) string {
	return m[:1] + strings.ToLower(m[1:])
}

var initialisms = map[string]string{
	"id": "ID", "ids": "IDs", "url": "URL", "urls": "URLs", "ctr": "CTR", "utm": "UTM",
	"api": "API", "json": "JSON", "csv": "CSV", "html": "HTML", "http": "HTTP", "ip": "IP",
	"uuid": "UUID", "vapid": "VAPID", "ttl": "TTL", "sdk": "SDK", "ok": "OK", "rss": "RSS",
}

// words splits a camelCase, snake_case or kebab-case name.
func words(s string) []string {
	var out []string
	var cur []rune
	rs := []rune(s)
	for i, r := range rs {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			if len(cur) > 0 {
				out = append(out, string(cur))
			}
			cur = nil
			continue
		}
		if unicode.IsUpper(r) && len(cur) > 0 && (unicode.IsLower(cur[len(cur)-1]) || unicode.IsDigit(cur[len(cur)-1]) || (i+1 < len(rs) && unicode.IsLower(rs[i+1]))) {
			out = append(out, string(cur))
			cur = nil
		}
		cur = append(cur, r)
	}
	if len(cur) > 0 {
		out = append(out, string(cur))
	}
	return out
}

// goName is an exported Go name for s.
func goName(s string) string {
	var b strings.Builder
	for _, w := range words(s) {
		if up, ok := initialisms[strings.ToLower(w)]; ok {
			b.WriteString(up)
			continue
		}
		r := []rune(w)
		b.WriteString(strings.ToUpper(string(r[0])) + string(r[1:]))
	}
	n := b.String()
	if n == "" || unicode.IsDigit([]rune(n)[0]) {
		n = "X" + n
	}
	return n
}

// varName is an unexported Go name for a path parameter.
func varName(s string) string {
	ws := words(s)
	n := strings.ToLower(ws[0])
	for _, w := range ws[1:] {
		n += goName(w)
	}
	return n
}

// comment is desc as a Go comment, indented by indent.
func comment(desc, indent string) string {
	desc = strings.TrimSpace(desc)
	if desc == "" {
		return ""
	}
	var b strings.Builder
	for _, para := range strings.Split(desc, "\n") {
		line := indent + "//"
		for _, w := range strings.Fields(para) {
			if len(line)+1+len(w) > 78 && line != indent+"//" {
				b.WriteString(line + "\n")
				line = indent + "//"
			}
			line += " " + w
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}
