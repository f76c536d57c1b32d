package api

import "testing"

// The writes to definitions purge the definitions cache; reads and a
// segment's preview (any key may call it) do not.
func TestDefinitionsRoutes(t *testing.T) {
	rt := (&API{}).routes()
	want := map[string]bool{
		"POST /api/v1/segments":                          true,
		"PUT /api/v1/segments/{id}":                      true,
		"POST /api/v1/automations":                       true,
		"POST /api/v1/goals":                             true,
		"POST /api/v1/segments/preview":                  false,
		"GET /api/v1/segments":                           false,
		"PUT /api/v1/prompt":                             true,
		"PUT /api/v1/welcome":                            true,
		"POST /api/v1/onsite":                            true,
		"PUT /api/v1/onsite/{id}":                        true,
		"DELETE /api/v1/onsite/{id}":                     true,
		"GET /api/v1/onsite":                             false,
		"GET /api/v1/projects/{projectId}/onsite":        false,
		"POST /api/v1/projects/{projectId}/pings/onsite": false,
	}
	seen := map[string]bool{}
	for _, r := range rt.routes {
		key := r.method + " " + r.pattern
		if w, ok := want[key]; ok {
			seen[key] = true
			if r.definitions != w {
				t.Errorf("%s purges the definitions cache: %v, want %v", key, r.definitions, w)
			}
		}
	}
	for key := range want {
		if !seen[key] {
			t.Errorf("no route %s", key)
		}
	}
}
