package controlplane

import (
	"errors"
	"strings"
	"testing"
)

func TestProcessKill(t *testing.T) {
	// The shell ignores SIGTERM: only SIGKILL ends it.
	p := startShell(t, "stubborn", "trap '' TERM; echo started; while :; do sleep 1; done")
	p.Kill()
	var pe *ProcessError
	if err := p.Exited(); !errors.As(err, &pe) || !strings.Contains(err.Error(), "killed") {
		t.Errorf("killed process: Exited() = %v, want a *ProcessError saying it was killed", err)
	}
	p.Kill() // a second Kill returns at once
}
