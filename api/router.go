package api

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/valyala/fasthttp"

	"github.com/relaybell/relaybell/store"
)

// authKind says what credentials a route takes.
type authKind int

const (
	authNone    authKind = iota // public (health, metrics, SDK routes)
	authKey                     // Bearer API key, scope checked (spec 5), or a session naming a website, role checked (spec 4.8)
	authAdmin                   // Bearer operator admin token
	authSession                 // a signed-in person's session, naming no website
	authPerson                  // no credentials, but the CSRF defence of a session (sign-up, login…)
)

// route is one entry of the route table.
type route struct {
	method  string
	pattern string // e.g. /api/v1/notifications/{id}; also the metrics label
	auth    authKind
	scope   string // authKey only; "" = any valid key
	role    string // the least role of a session call; "" = viewer to read, admin to change
	// sessionOnly: a key's call answers 403 session_required (spec 4.7).
	sessionOnly bool
	cors        bool // browser SDK route: open CORS, answers preflight
	// definitions: the route may change what Services.Definitions caches
	// (set by add: a write under /automations, /journeys, /goals,
	// /segments, /identity, /prompt, /welcome, /onsite or /topics,
	// enrolments aside), so the cache is purged after it.
	definitions bool
	handle      func(r *request) error
	segs        []string
}

// router matches method and path against the route table. Patterns are
// literal segments and {param} segments; there are few enough routes that a
// linear scan costs less than the JSON work of any request.
type router struct {
	routes []*route
}

func (rt *router) add(r *route) {
	r.segs = splitPath(r.pattern)
	// A preview reads (any key may call it): it must not empty the cache.
	r.definitions = r.method != http.MethodGet && definitionsRoute.MatchString(r.pattern) &&
		!strings.Contains(r.pattern, "/enrollments") && !strings.HasSuffix(r.pattern, "/preview")
	rt.routes = append(rt.routes, r)
}

func splitPath(p string) []string {
	return strings.Split(strings.TrimPrefix(p, "/"), "/")
}

// param is one {name} of a matched pattern.
type param struct{ name, value string }

// match finds the route for method and path; a literal segment beats a
// {param} one (so /notifications/export.csv is never taken for an id).
// When the path matches only under other methods, it returns them in
// allowed (for 405 and the CORS preflight).
func (rt *router) match(method, path string) (found *route, params []param, allowed []string, corsPath bool) {
	if !strings.HasPrefix(path, "/") {
		return nil, nil, nil, false
	}
	segs := splitPath(path)
	for _, r := range rt.routes {
		ps, ok := matchSegs(r.segs, segs)
		if !ok {
			continue
		}
		if r.method == method || (method == fasthttp.MethodHead && r.method == fasthttp.MethodGet) {
			if found == nil || len(ps) < len(params) {
				found, params = r, ps
			}
			continue
		}
		if !slices.Contains(allowed, r.method) {
			allowed = append(allowed, r.method)
		}
		corsPath = corsPath || r.cors
	}
	if found != nil {
		return found, params, nil, found.cors
	}
	return nil, nil, allowed, corsPath
}

func matchSegs(pattern, segs []string) ([]param, bool) {
	if len(pattern) != len(segs) {
		return nil, false
	}
	var ps []param
	for i, p := range pattern {
		if len(p) > 2 && p[0] == '{' && p[len(p)-1] == '}' {
			if segs[i] == "" {
				return nil, false
			}
			ps = append(ps, param{p[1 : len(p)-1], segs[i]})
			continue
		}
		if p != segs[i] {
			return nil, false
		}
	}
	return ps, true
}

// routes builds the route table.
func (a *API) routes() *router {
	rt := &router{}
	rt.add(&route{method: http.MethodGet, pattern: "/healthz", handle: a.handleHealthz})
	rt.add(&route{method: http.MethodGet, pattern: "/readyz", handle: a.handleReadyz})
	rt.add(&route{method: http.MethodGet, pattern: "/metrics", handle: a.metricsHandler()})
	rt.add(&route{method: http.MethodGet, pattern: "/api/v1/openapi.json", handle: a.handleOpenAPI})
	a.notificationRoutes(rt)
	a.statsRoutes(rt)
	a.testDeviceRoutes(rt)
	a.segmentRoutes(rt)
	a.topicRoutes(rt)
	a.automationRoutes(rt)
	a.goalRoutes(rt)
	a.templateRoutes(rt)
	a.onsiteRoutes(rt)
	a.integrationRoutes(rt)
	a.journeyRoutes(rt)
	a.scheduleRoutes(rt)
	a.feedRoutes(rt)
	a.settingsRoutes(rt)
	a.reportRoutes(rt)
	a.logoRoutes(rt)
	a.uploadRoutes(rt)
	a.suggestRoutes(rt)
	a.peopleRoutes(rt)
	a.webhookRoutes(rt)
	a.sessionRoutes(rt)
	a.keyRoutes(rt)
	a.websiteRoutes(rt)
	a.identityRoutes(rt)
	a.sdkRoutes(rt)
	a.eventRoutes(rt)
	a.adminRoutes(rt)
	return rt
}

// cleanText replaces what no stored text holds and what PostgreSQL refuses
// in a text parameter, invalid UTF-8 and NUL, with U+FFFD. A path segment
// or query value holding them then matches nothing instead of failing the
// query.
func cleanText(s string) string {
	if utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// cleanQuery applies cleanText to the query's names and values, keeping
// repeated parameters.
func cleanQuery(args *fasthttp.Args) {
	dirty := false
	for k, v := range args.All() {
		if !utf8.Valid(k) || !utf8.Valid(v) || bytes.IndexByte(k, 0) >= 0 || bytes.IndexByte(v, 0) >= 0 {
			dirty = true
			break
		}
	}
	if !dirty {
		return
	}
	var clean fasthttp.Args
	for k, v := range args.All() {
		clean.Add(cleanText(string(k)), cleanText(string(v)))
	}
	clean.CopyTo(args)
}

// canonicalIDs lower-cases the path's UUIDs: a UUID names the same thing
// in any letter case (RFC 9562), and the store holds them in lower case.
// {externalId} is the customer's own id, exact and case-sensitive, so it is
// kept as sent (personKey tries a UUID there both ways). Any other value
// goes through cleanText.
func canonicalIDs(params []param) {
	for i, p := range params {
		switch {
		case p.name != "externalId" && isUUID(p.value):
			params[i].value = strings.ToLower(p.value)
		default:
			params[i].value = cleanText(p.value)
		}
	}
}

// request is what a handler works with.
type request struct {
	fc     *fasthttp.RequestCtx
	ctx    context.Context
	id     string
	now    time.Time
	route  *route
	params []param
	owner  store.KeyOwner // the website and account called on: the key's, or the session's project's
	// session is the signed-in person when the call carries a dashboard
	// session instead of an API key (sessions.go); nil for key calls.
	session *caller
}

// bySession reports whether the call came from a signed-in person (the
// dashboard's session cookie) rather than an API key.
func (r *request) bySession() bool { return r.session != nil }

// param returns the value of a {name} segment of the route.
func (r *request) param(name string) string {
	for _, p := range r.params {
		if p.name == name {
			return p.value
		}
	}
	return ""
}

// loadOwn loads, with load, the record of the key's website that the
// path parameter param names by its UUID (in any letter case): 404
// not_found for an id that is not a UUID or names no record of the
// website.
func loadOwn[T any](r *request, param string, load func(ctx context.Context, websiteID, id string) (T, error)) (T, error) {
	var none T
	id := r.param(param)
	if !isUUID(id) {
		return none, errCode(CodeNotFound)
	}
	rec, err := load(r.ctx, r.owner.Website.ID, strings.ToLower(id))
	if errors.Is(err, store.ErrNotFound) {
		return none, errCode(CodeNotFound)
	}
	return rec, err
}

// serve is the single entry point of every request.
func (a *API) serve(fc *fasthttp.RequestCtx) {
	start := time.Now()
	id := requestID(fc)
	fc.Response.Header.Set(headerRequestID, id)
	label := "unmatched"
	corsPath := false
	defer func() {
		if p := recover(); p != nil {
			a.log.Error("handler panic", "request_id", id, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			fc.Response.Reset()
			fc.Response.Header.Set(headerRequestID, id)
			if corsPath {
				setCORS(fc)
			}
			writeError(fc, id, errCode(CodeInternal))
		}
		a.metrics.observe(label, string(fc.Method()), fc.Response.StatusCode(), time.Since(start))
	}()

	method := string(fc.Method())
	rt, params, allowed, cors := a.router.match(method, string(fc.Path()))
	corsPath = cors
	if corsPath {
		setCORS(fc)
	}
	if rt == nil {
		switch {
		case len(allowed) > 0 && method == fasthttp.MethodOptions && corsPath:
			label = "preflight"
			preflight(fc, allowed)
		case len(allowed) > 0:
			label = "method_not_allowed"
			fc.Response.Header.Set("Allow", strings.Join(allowed, ", "))
			writeError(fc, id, errorf(CodeMethodNotAllowed, "%s is not allowed here", method))
		case a.serveDashboard(fc):
			label = "dashboard"
		default:
			writeError(fc, id, errCode(CodeNotFound))
		}
		return
	}
	label = rt.pattern
	canonicalIDs(params)
	cleanQuery(fc.QueryArgs())

	ctx, cancel := context.WithTimeout(a.base, requestTimeout)
	defer cancel()
	r := &request{fc: fc, ctx: ctx, id: id, now: a.now(), route: rt, params: params}
	if err := a.run(r); err != nil {
		a.fail(r, err)
	}
}

// run checks the body size and credentials, then calls the handler.
func (a *API) run(r *request) error {
	if len(r.fc.Request.Body()) > a.cfg.MaxBodyBytes {
		return errorf(CodePayloadTooLarge, "the body exceeds %d bytes", a.cfg.MaxBodyBytes)
	}
	if r.route.cors {
		if err := a.takePublic(r); err != nil {
			return err
		}
	}
	switch r.route.auth {
	case authKey:
		// A call with an Authorization header is a key's, whatever
		// cookie rides along; one with only the session cookie a person's.
		if len(r.fc.Request.Header.Peek("Authorization")) == 0 && sessionToken(r) != "" {
			if err := a.authenticateSession(r, true); err != nil {
				return err
			}
		} else if err := a.authenticate(r); err != nil {
			return err
		}
		if r.route.sessionOnly && !r.bySession() {
			return errorf(CodeSessionRequired, "only the signed-in dashboard can do this")
		}
	case authSession:
		if err := a.authenticateSession(r, false); err != nil {
			return err
		}
	case authPerson:
		if err := a.checkCSRF(r); err != nil {
			return err
		}
	case authAdmin:
		if err := a.checkAdmin(r); err != nil {
			return err
		}
	}
	err := r.route.handle(r)
	if r.route.definitions {
		// Even after an error: the change may have been made.
		a.defs.Purge()
	}
	return err
}

// definitionsRoute matches the routes whose writes change definitions the
// cache holds.
var definitionsRoute = regexp.MustCompile(`^/api/v1/(automations|journeys|goals|segments|identity|prompt|welcome|onsite|topics)(/|$)`)

// fail writes err: an *Error as itself, anything else as a logged 500.
func (a *API) fail(r *request, err error) {
	var apiErr *Error
	if !errors.As(err, &apiErr) {
		a.log.Error("request failed", "request_id", r.id, "route", r.route.pattern, "err", err)
		apiErr = errCode(CodeInternal)
	}
	writeError(r.fc, r.id, apiErr)
}

// writeError is the only writer of error bodies (spec 7).
func writeError(fc *fasthttp.RequestCtx, id string, e *Error) {
	writeJSON(fc, e.Status(), errorBody{Error: e, RequestID: id})
}

// transportError answers requests fasthttp could not hand to the handler:
// a body far over the limit, an unreadable request. A connection that sent
// no whole request within the read timeout is closed without an answer, as
// net/http does: a client's spare keep-alive connection that never carried
// a request would otherwise get an unsolicited 400.
func (a *API) transportError(fc *fasthttp.RequestCtx, err error) {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		fc.Conn().Close()
		return
	}
	id := requestID(fc)
	fc.Response.Reset()
	fc.Response.Header.Set(headerRequestID, id)
	if errors.Is(err, fasthttp.ErrBodyTooLarge) {
		writeError(fc, id, errorf(CodePayloadTooLarge, "the body exceeds %d bytes", a.cfg.MaxBodyBytes))
	} else {
		writeError(fc, id, errorf(CodeBadRequest, "the request could not be read"))
	}
	a.metrics.observe("transport_error", "", fc.Response.StatusCode(), 0)
}

const headerRequestID = "X-Request-Id"

// requestID echoes a sane client-sent X-Request-Id (1-64 characters of
// [A-Za-z0-9_-]) or makes a random one.
func requestID(fc *fasthttp.RequestCtx) string {
	if v := fc.Request.Header.Peek(headerRequestID); saneRequestID(v) {
		return string(v)
	}
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

func saneRequestID(v []byte) bool {
	if len(v) == 0 || len(v) > 64 {
		return false
	}
	for _, c := range v {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// setCORS opens a browser SDK route to every origin; the routes take no
// credentials, so no cookie or key can ride along.
func setCORS(fc *fasthttp.RequestCtx) {
	h := &fc.Response.Header
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Expose-Headers", headerRequestID)
}

// preflight answers a CORS OPTIONS request.
func preflight(fc *fasthttp.RequestCtx, allowed []string) {
	h := &fc.Response.Header
	h.Set("Access-Control-Allow-Methods", strings.Join(append(allowed, fasthttp.MethodOptions), ", "))
	h.Set("Access-Control-Allow-Headers", "Content-Type, X-Request-Id")
	h.Set("Access-Control-Max-Age", "86400")
	fc.SetStatusCode(http.StatusNoContent)
}
