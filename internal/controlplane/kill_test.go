package controlplane

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestProcessKill(t *testing.T) {
	dir := t.TempDir()
	// The shell ignores SIGTERM: only SIGKILL ends it.
	p, err := StartProcess("stubborn", "/bin/sh", []string{"-c", "trap '' TERM; echo started; while :; do sleep 1; done"}, dir)
	if err != nil {
		t.Fatal(err)
	}
	err = Poll(context.Background(), 10*time.Millisecond, 10*time.Second, p, func(context.Context) (bool, error) {
		return strings.Contains(Tail(p.LogPath, 1), "started"), nil
	})
	if err != nil {
		t.Fatalf("waiting for the log: %v", err)
	}
	p.Kill()
	var pe *ProcessError
	if err := p.Exited(); !errors.As(err, &pe) || !strings.Contains(err.Error(), "killed") {
		t.Errorf("killed process: Exited() = %v, want a *ProcessError saying it was killed", err)
	}
	p.Kill() // a second Kill returns at once
}
