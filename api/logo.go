package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/relaybell/relaybell/store"
)

// Codes of PUT /logo that section 7 leaves to the service.
const (
	// CodeUploadNotFound: uploadId names no upload of the website.
	CodeUploadNotFound = "upload_not_found"
	// CodeInvalidLogo: both uploadId and url were given.
	CodeInvalidLogo = "invalid_logo"
)

// maxLogoURL bounds a logo's own URL.
const maxLogoURL = 2048

// logoJSON is a logo as GET and PUT /logo answer it: uploadId null for
// a URL of the website's own; url is what notifications and the prompt
// show (an upload's 192x192 icon).
type logoJSON struct {
	UploadID *string `json:"uploadId"`
	URL      string  `json:"url"`
}

func logoOut(l *store.Logo) map[string]*logoJSON {
	if l == nil {
		return map[string]*logoJSON{"logo": nil}
	}
	out := &logoJSON{URL: l.URL}
	if l.UploadID != "" {
		out.UploadID = &l.UploadID
	}
	return map[string]*logoJSON{"logo": out}
}

// handleGetLogo serves GET /api/v1/logo.
func (a *API) handleGetLogo(r *request) error {
	return r.json(http.StatusOK, logoOut(r.owner.Website.Settings.Logo))
}

// handlePutLogo serves PUT /api/v1/logo: {uploadId} (one of the
// website's uploads) or {url} (https), or both null to remove it.
func (a *API) handlePutLogo(r *request) error {
	var in struct {
		UploadID json.RawMessage `json:"uploadId"`
		URL      json.RawMessage `json:"url"`
	}
	if err := decodeJSON(r.fc.Request.Body(), &in, strict); err != nil {
		return err
	}
	if in.UploadID == nil && in.URL == nil {
		return errorf(CodeNothingToUpdate, "send uploadId or url, or null to remove the logo")
	}
	var uploadID, rawURL *string
	for _, m := range []struct {
		raw  json.RawMessage
		dst  **string
		name string
	}{{in.UploadID, &uploadID, "uploadId"}, {in.URL, &rawURL, "url"}} {
		if m.raw == nil || string(m.raw) == "null" {
			continue
		}
		var s string
		if json.Unmarshal(m.raw, &s) != nil {
			return errorf(CodeInvalidLogo, "%s must be a string or null", m.name)
		}
		*m.dst = &s
	}
	var logo *store.Logo
	switch {
	case uploadID != nil && rawURL != nil:
		return errorf(CodeInvalidLogo, "send uploadId or url, not both")
	case uploadID != nil:
		id := strings.ToLower(*uploadID)
		if !isUUID(id) {
			return errorf(CodeUploadNotFound, "uploadId names no upload of this website")
		}
		u, err := a.st.Upload(r.ctx, r.owner.Website.ID, id)
		if errors.Is(err, store.ErrNotFound) {
			return errorf(CodeUploadNotFound, "uploadId names no upload of this website")
		} else if err != nil {
			return err
		}
		logo = &store.Logo{UploadID: u.ID, URL: a.uploadURL(r, u.ID, store.UploadIcon)}
	case rawURL != nil:
		u, err := url.Parse(*rawURL)
		if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || len(*rawURL) > maxLogoURL {
			return errorf(CodeInvalidURL, "url must be an https URL of at most %d characters", maxLogoURL)
		}
		logo = &store.Logo{URL: *rawURL}
	}
	w, err := a.st.UpdateWebsite(r.ctx, r.owner.Website.ID, func(w *store.Website) error {
		w.Settings.Logo = logo
		return nil
	})
	if err != nil {
		return err
	}
	a.keys.purge() // the key cache holds the website; this node sees the change at once
	return r.json(http.StatusOK, logoOut(w.Settings.Logo))
}

func (a *API) logoRoutes(rt *router) {
	rt.add(&route{method: http.MethodGet, pattern: "/api/v1/logo", auth: authKey, handle: a.handleGetLogo})
	rt.add(&route{method: http.MethodPut, pattern: "/api/v1/logo", auth: authKey, scope: ScopeSettingsWrite, handle: a.handlePutLogo})
}
