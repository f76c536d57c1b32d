package api

import (
	_ "embed"
	"net/http"
)

// openAPIDoc is the OpenAPI 3.1.0 description of the routes served here
// (API version 1.2.0). A test keeps it in step with the route table.
//
//go:embed openapi.json
var openAPIDoc []byte

// handleOpenAPI serves GET /api/v1/openapi.json.
func (a *API) handleOpenAPI(r *request) error {
	r.fc.SetStatusCode(http.StatusOK)
	r.fc.SetContentType("application/json")
	r.fc.SetBody(openAPIDoc)
	return nil
}
