package serve

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestHealthz(t *testing.T) {
	for _, tc := range []struct {
		state int32
		code  int
		body  string
	}{
		{starting, http.StatusServiceUnavailable, `{"status":"starting"}` + "\n"},
		{ready, http.StatusOK, `{"status":"ok"}` + "\n"},
		{stopping, http.StatusServiceUnavailable, `{"status":"stopping"}` + "\n"},
	} {
		s := &server{}
		s.state.Store(tc.state)
		w := httptest.NewRecorder()
		s.healthz(w, httptest.NewRequest("GET", "/healthz", nil))
		if w.Code != tc.code || w.Body.String() != tc.body {
			t.Errorf("state %d: %d %q, want %d %q", tc.state, w.Code, w.Body.String(), tc.code, tc.body)
		}
	}
}
