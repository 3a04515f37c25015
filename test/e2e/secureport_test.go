package e2e

import (
	"net/http"
	"testing"
	"time"
)

// TestSecurePortRefusesAnonymous: the scheduler's /metrics and /configz
// answer 401 or 403 to a request without a token, and 200 to the admin
// (system:masters), so the refusal is authorization, not a broken endpoint.
func TestSecurePortRefusesAnonymous(t *testing.T) {
	sched := sharedScheduler(t)
	ctx := testContext(t, time.Minute)
	for _, path := range []string{"/metrics", "/configz"} {
		code, body, err := sched.GetWithToken(ctx, path, "")
		if err != nil {
			t.Errorf("anonymous GET %s: %v", path, err)
			continue
		}
		if code != http.StatusUnauthorized && code != http.StatusForbidden {
			t.Errorf("anonymous GET %s%s: %d, want 401 or 403; body %.200q", sched.URL, path, code, body)
		}
		code, _, err = sched.GetWithToken(ctx, path, s.cp.AdminToken)
		if err != nil || code != http.StatusOK {
			t.Errorf("GET %s%s as %s: %d %v, want 200", sched.URL, path, "the admin", code, err)
		}
	}
}
