package controlplane

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Poll runs cond every interval until it returns true, the timeout passes,
// ctx ends or p exits, whichever comes first. If p exits, the error is p's
// *ProcessError.
func Poll(ctx context.Context, interval, timeout time.Duration, p *Process, cond wait.ConditionWithContextFunc) error {
	return wait.PollUntilContextTimeout(ctx, interval, timeout, true, func(ctx context.Context) (bool, error) {
		if err := p.Exited(); err != nil {
			return false, err
		}
		return cond(ctx)
	})
}

// WaitHTTPOK polls url (plain HTTP, no credentials) until it answers 200,
// the timeout passes, ctx ends or p exits; the error is attributed to p.
func WaitHTTPOK(ctx context.Context, p *Process, url string, interval, timeout time.Duration) error {
	client := &http.Client{Timeout: 2 * time.Second}
	err := Poll(ctx, interval, timeout, p, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return WaitFailed(p, err, "waiting for %s", url)
	}
	return nil
}

// WaitFailed attributes a failed Poll of p to p. When p died, that is the
// whole story; otherwise the error says what was being waited for.
func WaitFailed(p *Process, err error, format string, args ...interface{}) error {
	var pe *ProcessError
	if errors.As(err, &pe) {
		return err
	}
	return &ProcessError{Process: p, Err: fmt.Errorf(format+": %w", append(args, err)...)}
}

// FreePort asks the kernel for a free port on 127.0.0.1. The port is released
// before the child binds it; nothing else on a developer machine races for
// ephemeral ports often enough to matter.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
