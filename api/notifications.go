package api

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/csv"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/relaybell/relaybell/analytics"
	"github.com/relaybell/relaybell/notification"
	"github.com/relaybell/relaybell/store"
)

// Paging of spec 8.2.
const (
	defaultPageSize = 25
	maxPageSize     = 100
)

// maxDraftBytes is the size limit of one draft (spec 3.1, 8.2).
const maxDraftBytes = 256 << 10

// dispatchTimeout bounds publishing a send intent on the request's path; a
// slower bus leaves the send to the outbox sweep.
const dispatchTimeout = 5 * time.Second

// statuses lists the notification statuses of spec 3.1.
var statuses = []string{store.StatusDraft, store.StatusScheduled, store.StatusQueued, store.StatusHeldForReview,
	store.StatusSending, store.StatusSent, store.StatusFailed, store.StatusCanceled}

// sendAnswer is the success body of POST /notifications.
type sendAnswer struct {
	OK             bool   `json:"ok"`
	NotificationID string `json:"notificationId"`
	Status         string `json:"status"`
	Message        string `json:"message,omitempty"`
}

// handleSend serves POST /api/v1/notifications: validate everything, store
// the notification, then publish its intent. Nothing is stored when any
// check fails.
func (a *API) handleSend(r *request) error {
	body := r.fc.Request.Body()
	req := new(notification.Request)
	if err := decodeJSON(body, req, strict); err != nil {
		return err
	}
	n, err := a.submit(r, req, len(body), nil)
	if err != nil {
		return err
	}
	return sendAnswerOf(r, req, n)
}

// dispatch publishes a committed send's intent. A failure is logged and
// counted, never answered: the outbox sweep re-drives the send.
func (a *API) dispatch(r *request, n store.Notification) {
	if a.disp == nil {
		return
	}
	ctx, cancel := context.WithTimeout(r.ctx, dispatchTimeout)
	defer cancel()
	if err := a.disp.Dispatch(ctx, n); err != nil {
		a.metrics.dispatchFailures.Inc()
		a.log.Warn("dispatching send; the outbox sweep will retry", "request_id", r.id, "notification_id", n.ID, "err", err)
	}
}

// fromNotificationError maps the notification package's validation errors
// onto the catalog; anything else is internal.
func fromNotificationError(err error) error {
	var ne *notification.Error
	if !errors.As(err, &ne) {
		return fmt.Errorf("preparing notification: %w", err)
	}
	if _, ok := catalog[ne.Code]; !ok {
		return fmt.Errorf("notification error outside the catalog: %w", err)
	}
	return &Error{Code: ne.Code, Message: ne.Message}
}

// listAnswer is the body of GET /notifications.
type listAnswer struct {
	Items      []notification.Item `json:"items"`
	NextCursor *string             `json:"nextCursor"`
}

// handleList serves GET /api/v1/notifications: newest first, paged by an
// opaque cursor holding the last item's sequence number, so new sends never
// shift later pages.
func (a *API) handleList(r *request) error {
	args := r.fc.QueryArgs()
	limit := pageSize(string(args.Peek("limit")))
	q, filterKey, err := a.listQuery(r)
	if err != nil {
		return err
	}
	if c := string(args.Peek("cursor")); args.Has("cursor") {
		seq, ok := decodeCursor(c, q.WebsiteID, filterKey)
		if !ok {
			return errorf(CodeInvalidCursor, "cursor must be the nextCursor of the previous page, with the same filters")
		}
		q.BeforeSeq = seq
	}
	q.Limit = limit + 1
	rows, err := a.st.ListNotifications(r.ctx, q)
	if err != nil {
		return fmt.Errorf("listing notifications: %w", err)
	}
	out := listAnswer{Items: make([]notification.Item, 0, min(len(rows), limit))}
	if len(rows) > limit {
		rows = rows[:limit]
		c := encodeCursor(rows[limit-1].Seq, q.WebsiteID, filterKey)
		out.NextCursor = &c
	}
	for _, n := range rows {
		out.Items = append(out.Items, notification.ListItem(n))
	}
	return r.json(http.StatusOK, out)
}

// listQuery reads the filters of GET /notifications and its export:
// status, from and to (days in tz, the website's by default), q. It also
// returns the key that binds a cursor to them.
func (a *API) listQuery(r *request) (store.ListQuery, string, error) {
	args := r.fc.QueryArgs()
	var statusArgs []string
	for _, v := range args.PeekMulti("status") {
		statusArgs = append(statusArgs, string(v))
	}
	wanted, apiErr := parseStatuses(statusArgs)
	if apiErr != nil {
		return store.ListQuery{}, "", apiErr
	}
	loc, apiErr := tzArg(r, r.owner.Website.Timezone)
	if apiErr != nil {
		return store.ListQuery{}, "", apiErr
	}
	q := store.ListQuery{WebsiteID: r.owner.Website.ID, Statuses: wanted, Q: strings.TrimSpace(string(args.Peek("q")))}
	for _, o := range []struct {
		arg, what string
		to        *string
	}{{"feedId", "a feed's", &q.FeedID}, {"scheduleId", "a recurring schedule's", &q.ScheduleID}} {
		if v := string(args.Peek(o.arg)); args.Has(o.arg) {
			if !isUUID(v) {
				return store.ListQuery{}, "", errorf(CodeInvalidID, "%s must be %s id", o.arg, o.what)
			}
			*o.to = strings.ToLower(v)
		}
	}
	from, to := string(args.Peek("from")), string(args.Peek("to"))
	if q.From, q.To, apiErr = dayRange(from, to, loc); apiErr != nil {
		return store.ListQuery{}, "", apiErr
	}
	key := strings.Join([]string{strings.Join(wanted, ","), q.From.Format(time.RFC3339), q.To.Format(time.RFC3339), q.Q, q.ScheduleID, q.FeedID}, "\x00")
	return q, key, nil
}

// maxNotificationExport caps the notifications CSV export (spec 8.2).
const maxNotificationExport = 10_000

// handleNotificationExport serves GET /api/v1/notifications/export.csv: the list's
// rows and order, up to 10,000, as CSV.
func (a *API) handleNotificationExport(r *request) error {
	q, _, err := a.listQuery(r)
	if err != nil {
		return err
	}
	q.Limit = maxNotificationExport
	rows, err := a.st.ListNotifications(r.ctx, q)
	if err != nil {
		return fmt.Errorf("exporting notifications: %w", err)
	}
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Write([]string{"id", "created_at", "scheduled_at", "status", "title", "target", "recipients", "sent", "failed",
		"clicked", "ctr", "conversions", "revenue"})
	for _, n := range rows {
		it := notification.ListItem(n)
		scheduled := ""
		if it.ScheduledAt != nil {
			scheduled = *it.ScheduledAt
		}
		w.Write([]string{it.ID, it.CreatedAt, scheduled, it.Status, csvSafe(it.Title), csvSafe(it.TargetSummary),
			strconv.FormatInt(it.Recipients, 10), strconv.FormatInt(it.Sent, 10), strconv.FormatInt(it.Failed, 10),
			strconv.FormatInt(it.Clicked, 10), strconv.FormatFloat(it.Ctr, 'f', 1, 64),
			strconv.FormatInt(it.Conversions, 10), strconv.FormatFloat(it.Revenue, 'f', -1, 64)})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return fmt.Errorf("writing CSV: %w", err)
	}
	name := "relaybell-notifications"
	for _, d := range []string{"from", "to"} {
		if v := strings.TrimSpace(string(r.fc.QueryArgs().Peek(d))); v != "" {
			name += "-" + v // a valid YYYY-MM-DD, checked by listQuery
		}
	}
	r.fc.Response.Header.Set("Content-Disposition", "attachment; filename="+name+".csv")
	r.fc.Response.Header.Set("X-Row-Count", strconv.Itoa(len(rows)))
	r.fc.SetContentType("text/csv; charset=utf-8")
	r.fc.SetStatusCode(http.StatusOK)
	r.fc.SetBody(buf.Bytes())
	return nil
}

// pageSize reads `limit` (spec 8.2: 1-100, default 25). Values out of range
// are clamped into it; what is not an integer gets the default.
func pageSize(s string) int {
	if s == "" {
		return defaultPageSize
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return defaultPageSize
	}
	return min(max(n, 1), maxPageSize)
}

// parseStatuses reads comma-separated (or repeated) `status` values into a
// sorted, distinct list; nil means the default (all but drafts).
func parseStatuses(vals []string) ([]string, *Error) {
	var out []string
	for _, v := range vals {
		for _, s := range strings.Split(v, ",") {
			s = strings.TrimSpace(s)
			if s == "" {
				continue
			}
			if !slices.Contains(statuses, s) {
				return nil, errorf(CodeInvalidStatus, "unknown status %q", s)
			}
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// Cursors are base64url of: version byte, the last item's sequence number
// (8 bytes, big endian), and 8 bytes of an HMAC over the website, the
// filters and the sequence number. The MAC is not a secret, it only makes
// a cursor from another website, other filters or a typo answer 400
// invalid_cursor instead of a wrong page.
const cursorVersion = 1

var cursorKey = []byte("relaybell notification list cursor v1")

func cursorMAC(seq int64, websiteID, filterKey string) []byte {
	m := hmac.New(sha256.New, cursorKey)
	m.Write([]byte(websiteID))
	m.Write([]byte{0})
	m.Write([]byte(filterKey))
	m.Write([]byte{0})
	m.Write(binary.BigEndian.AppendUint64(nil, uint64(seq)))
	return m.Sum(nil)[:8]
}

func encodeCursor(seq int64, websiteID, filterKey string) string {
	b := make([]byte, 0, 17)
	b = append(b, cursorVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(seq))
	b = append(b, cursorMAC(seq, websiteID, filterKey)...)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s, websiteID, filterKey string) (int64, bool) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 17 || b[0] != cursorVersion {
		return 0, false
	}
	seq := int64(binary.BigEndian.Uint64(b[1:9]))
	if seq <= 0 || !hmac.Equal(b[9:], cursorMAC(seq, websiteID, filterKey)) {
		return 0, false
	}
	return seq, true
}

// handleDetail serves GET /api/v1/notifications/{id}. Another website's id
// and a malformed one are both 404 not_found.
func (a *API) handleDetail(r *request) error {
	id := r.param("id")
	if !isUUID(id) {
		return errCode(CodeNotFound)
	}
	websiteID := r.owner.Website.ID
	n, err := a.st.Notification(r.ctx, websiteID, id)
	if errors.Is(err, store.ErrNotFound) {
		return errCode(CodeNotFound)
	}
	if err != nil {
		return fmt.Errorf("loading notification: %w", err)
	}
	rep, err := a.an.Report(r.ctx, websiteID, n.ID)
	if err != nil {
		// The counters still tell most of the story; show them.
		a.log.Warn("loading notification report", "request_id", r.id, "notification_id", n.ID, "err", err)
		rep = analytics.Report{}
	}
	return r.json(http.StatusOK, notification.Detail(n, rep, nonEmpty(r.owner.Website.Settings.Currency)))
}

func (a *API) notificationRoutes(rt *router) {
	rt.add(&route{method: http.MethodPost, pattern: "/api/v1/notifications", auth: authKey, scope: ScopeSend, handle: a.handleSend})
	rt.add(&route{method: http.MethodGet, pattern: "/api/v1/notifications", auth: authKey, handle: a.handleList})
	rt.add(&route{method: http.MethodGet, pattern: "/api/v1/notifications/export.csv", auth: authKey, handle: a.handleNotificationExport})
	rt.add(&route{method: http.MethodGet, pattern: "/api/v1/notifications/{id}", auth: authKey, handle: a.handleDetail})
	rt.add(&route{method: http.MethodPatch, pattern: "/api/v1/notifications/{id}", auth: authKey, scope: ScopeSend, handle: a.handlePatchDraft})
	rt.add(&route{method: http.MethodDelete, pattern: "/api/v1/notifications/{id}", auth: authKey, scope: ScopeSend, handle: a.handleDeleteDraft})
	rt.add(&route{method: http.MethodPost, pattern: "/api/v1/notifications/{id}/send", auth: authKey, scope: ScopeSend, handle: a.handleSendDraft})
	rt.add(&route{method: http.MethodPost, pattern: "/api/v1/notifications/{id}/cancel", auth: authKey, scope: ScopeSend, handle: a.handleCancel})
}
