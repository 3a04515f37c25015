package controlplane

import (
	"context"
	"errors"
	"fmt"
	"net"
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
