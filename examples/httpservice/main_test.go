package main

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A request that finds the pool full is refused at once with 503 and
// Retry-After; with room again it is served; once the pool has shut down
// it is refused the same way.
func TestRenderRefusesWhenFull(t *testing.T) {
	s := newService(1, 0) // one worker, no queue
	defer s.pool.Stop()
	get := func() *http.Response {
		rec := httptest.NewRecorder()
		s.handler().ServeHTTP(rec, httptest.NewRequest("GET", "/render?ms=0", nil))
		return rec.Result()
	}

	started, release := make(chan struct{}), make(chan struct{})
	s.pool.Submit(func() { close(started); <-release }) // other work holds the one worker
	<-started
	resp := get()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "full")
	assert.Equal(t, retryAfter, resp.Header.Get("Retry-After"), "full")

	close(release)
	require.NoError(t, s.pool.WaitIdle(t.Context()))
	assert.Equal(t, http.StatusOK, get().StatusCode, "room again")

	require.NoError(t, s.pool.Shutdown(t.Context()))
	resp = get()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "shut down")
	assert.Equal(t, retryAfter, resp.Header.Get("Retry-After"), "shut down")
	st := s.pool.Status()
	assert.EqualValues(t, 1, st.Rejected, "refused for a full queue")
	assert.EqualValues(t, 2, st.Completed, "the other work and the request served")
}
