package api

import "net/http"

// handleHealthz answers while the process can serve at all.
func (a *API) handleHealthz(r *request) error {
	return r.json(http.StatusOK, map[string]string{"status": "ok"})
}

// handleReadyz answers 200 once SetReady(true) was called and 503 before
// (and after SetReady(false), e.g. while draining).
func (a *API) handleReadyz(r *request) error {
	if !a.ready.Load() {
		return r.json(http.StatusServiceUnavailable, map[string]string{"status": "not_ready"})
	}
	return r.json(http.StatusOK, map[string]string{"status": "ok"})
}
