package controlplane

import (
	"context"
	"strings"
	"testing"
	"time"
)

// startShell starts /bin/sh -c script as the process name in a temporary
// directory and waits until its log's last line is "started", which the
// script echoes once it is ready for what the test does to it (a trap
// set, say). The process is killed when the test ends, should the test
// not have ended it.
func startShell(t *testing.T, name, script string) *Process {
	t.Helper()
	p, err := StartProcess(name, "/bin/sh", []string{"-c", script}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	err = Poll(context.Background(), 10*time.Millisecond, 10*time.Second, p, func(context.Context) (bool, error) {
		return strings.Contains(Tail(p.LogPath, 1), "started"), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s to log that it started: %v", name, err)
	}
	return p
}
