package api

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/relaybell/relaybell/notification"
	"github.com/relaybell/relaybell/store"
)

// Test devices (spec 4.9 names the route group; DESIGN.md its paths): the
// browsers a website's team marked to receive its test sends. A test send
// goes to them and nobody else, whatever its body says, and draws on the
// website's budget of test sends (spec 8.1: 120 a clock hour).
const (
	maxTestDeviceName  = 60
	testSendsPerHour   = 120 // per website
	kindTestDevices    = "test"
	defaultTestDevName = "Test device"
)

// Codes of the test-device routes, which section 7 leaves to the service.
const (
	CodeEndpointRequired    = "endpoint_required"
	CodeUnknownEndpoint     = "unknown_endpoint"
	CodeTooManyTestDevices  = "too_many_test_devices"
	CodeNoTestDevices       = "no_test_devices"
	CodeTestSendNotTargeted = "test_send_not_targeted"
)

func (a *API) testDeviceRoutes(rt *router) {
	add := func(method, pattern, scope string, h func(*request) error) {
		rt.add(&route{method: method, pattern: "/api/v1" + pattern, auth: authKey, scope: scope, handle: h})
	}
	add(http.MethodGet, "/test-devices", "", a.handleListTestDevices)
	add(http.MethodPost, "/test-devices", ScopeSettingsWrite, a.handleAddTestDevice)
	add(http.MethodDelete, "/test-devices/{id}", ScopeSettingsWrite, a.handleRemoveTestDevice)
	add(http.MethodPost, "/test-devices/send", ScopeSend, a.handleTestSend)
}

// testDeviceView is a test device as the API shows it.
type testDeviceView struct {
	ID           string  `json:"id"` // the endpoint's id
	Name         string  `json:"name"`
	SubscriberID string  `json:"subscriberId"`
	ExternalID   *string `json:"externalId"`
	Device       string  `json:"device"`
	UserAgent    string  `json:"user_agent"`
	CreatedAt    string  `json:"created_at"`
	LastSeenAt   string  `json:"last_seen_at"`
}

func testDeviceOut(d store.TestDevice) testDeviceView {
	v := testDeviceView{ID: d.EndpointID, Name: d.Name, SubscriberID: d.SubscriberID, Device: d.Device, UserAgent: d.UserAgent,
		CreatedAt: d.CreatedAt.UTC().Format(time.RFC3339Nano), LastSeenAt: d.LastSeenAt.UTC().Format(time.RFC3339Nano)}
	if d.ExternalID != "" {
		v.ExternalID = &d.ExternalID
	}
	return v
}

// handleListTestDevices serves GET /api/v1/test-devices, newest first.
func (a *API) handleListTestDevices(r *request) error {
	list, err := a.st.TestDevices(r.ctx, r.owner.Website.ID)
	if err != nil {
		return err
	}
	out := make([]testDeviceView, len(list))
	for i, d := range list {
		out[i] = testDeviceOut(d)
	}
	return r.json(http.StatusOK, map[string]any{"testDevices": out})
}

// handleAddTestDevice serves POST /api/v1/test-devices {endpointId, name?}:
// 201 for a new test device, 200 when the browser was one (renamed when a
// name is given).
func (a *API) handleAddTestDevice(r *request) error {
	var in struct {
		EndpointID *string `json:"endpointId"`
		Name       *string `json:"name"`
	}
	if err := decodeJSON(r.fc.Request.Body(), &in, strict); err != nil {
		return err
	}
	if in.EndpointID == nil || strings.TrimSpace(*in.EndpointID) == "" {
		return errorf(CodeEndpointRequired, "endpointId (the id the browser SDK's subscribe answered) is required")
	}
	id := strings.ToLower(strings.TrimSpace(*in.EndpointID))
	if !isUUID(id) {
		return errorf(CodeUnknownEndpoint, "no browser %q subscribed to this website", *in.EndpointID)
	}
	name := ""
	if in.Name != nil {
		name = *in.Name
	}
	name = trimmedName(name, defaultTestDevName, maxTestDeviceName)
	d, created, err := a.st.AddTestDevice(r.ctx, r.owner.Website.ID, id, name, r.now.UTC().Truncate(time.Millisecond))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return errorf(CodeUnknownEndpoint, "no browser %q subscribed to this website", *in.EndpointID)
	case errors.Is(err, store.ErrConflict):
		return errorf(CodeTooManyTestDevices, "a website has at most %d test devices; remove one first", store.MaxTestDevices)
	case err != nil:
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return r.json(status, map[string]testDeviceView{"testDevice": testDeviceOut(d)})
}

// handleRemoveTestDevice serves DELETE /api/v1/test-devices/{id}; a
// browser that is no test device is fine.
func (a *API) handleRemoveTestDevice(r *request) error {
	id := r.param("id")
	if !isUUID(id) {
		return errCode(CodeNotFound)
	}
	if err := a.st.RemoveTestDevice(r.ctx, r.owner.Website.ID, strings.ToLower(id)); err != nil {
		return err
	}
	return r.json(http.StatusOK, okAnswer{OK: true})
}

// testSendAnswer is the 202 of POST /test-devices/send.
type testSendAnswer struct {
	sendAnswer
	Devices int `json:"devices"`
}

// handleTestSend serves POST /api/v1/test-devices/send: a send request's
// content (spec 2.1) goes now to the website's test devices and nobody
// else. A targeting, timing, A/B or draft member is refused (400
// test_send_not_targeted) rather than ignored. It is transactional (quiet
// hours and the frequency cap never hold a test), keeps no send body (a
// repeat of it as POST /notifications would go to everyone), and draws on
// the test budget.
func (a *API) handleTestSend(r *request) error {
	body := r.fc.Request.Body()
	req := new(notification.Request)
	if err := decodeJSON(body, req, strict); err != nil {
		return err
	}
	if m := req.AudienceOrTiming(); m != "" {
		return errorf(CodeTestSendNotTargeted, "a test send goes now to the website's test devices only: leave out %s", m)
	}
	devices, err := a.st.TestDevices(r.ctx, r.owner.Website.ID)
	if err != nil {
		return err
	}
	if len(devices) == 0 {
		return errorf(CodeNoTestDevices, "the website has no test device: add one with POST /test-devices")
	}
	req.TestDevices = true
	n, err := a.submit(r, req, len(body), nil)
	if err != nil {
		return err
	}
	return r.json(http.StatusAccepted, testSendAnswer{sendAnswer: sendAnswer{OK: true, NotificationID: n.ID, Status: n.Status}, Devices: len(devices)})
}
