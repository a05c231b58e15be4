package server

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestHealthz(t *testing.T) {
	for _, tc := range []struct {
		state State
		code  int
		body  string
	}{
		{Starting, http.StatusServiceUnavailable, `{"status":"starting"}` + "\n"},
		{Ready, http.StatusOK, `{"status":"ok"}` + "\n"},
		{Stopping, http.StatusServiceUnavailable, `{"status":"stopping"}` + "\n"},
	} {
		s := &Server{}
		s.state.Store(int32(tc.state))
		w := httptest.NewRecorder()
		s.healthz(w, httptest.NewRequest("GET", "/healthz", nil))
		if w.Code != tc.code || w.Body.String() != tc.body {
			t.Errorf("state %d: %d %q, want %d %q", tc.state, w.Code, w.Body.String(), tc.code, tc.body)
		}
	}
}
