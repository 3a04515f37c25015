package e2eutil

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	utilrand "k8s.io/apimachinery/pkg/util/rand"

	"github.com/devicefit/devicefit/internal/controlplane"
)

// StartControlPlane starts etcd and kube-apiserver from binDir in a new
// temporary directory devicefit-<name>-* (`make clean` removes those a
// failed run keeps). On failure it prints the end of the failing process's
// log to stderr, keeps the directory and returns the error.
func StartControlPlane(ctx context.Context, name, binDir string) (*controlplane.ControlPlane, string, error) {
	dir, err := os.MkdirTemp("", "devicefit-"+name+"-")
	if err != nil {
		return nil, "", err
	}
	start := time.Now()
	cp, err := controlplane.Start(ctx, controlplane.Options{BinDir: binDir, Dir: dir, UserAgent: "devicefit-" + name})
	if err != nil {
		var pe *controlplane.ProcessError
		if errors.As(err, &pe) {
			fmt.Fprintf(os.Stderr, "last lines of %s:\n%s\n", pe.Process.LogPath, controlplane.Tail(pe.Process.LogPath, 40))
		}
		return nil, dir, fmt.Errorf("starting the control plane (logs kept in %s): %w", dir, err)
	}
	fmt.Printf("%s: control plane at %s in %.1fs (dir %s)\n", name, cp.URL, time.Since(start).Seconds(), dir)
	return cp, dir, nil
}

var nonName = regexp.MustCompile(`[^a-z0-9]+`)

// NamespaceName is a fresh namespace name for a test: prefix, the test's
// name made DNS-safe and cut to 40 characters, and a random suffix.
func NamespaceName(prefix, testName string) string {
	base := strings.Trim(nonName.ReplaceAllString(strings.ToLower(testName), "-"), "-")
	if len(base) > 40 {
		base = base[:40]
	}
	return prefix + "-" + strings.TrimRight(base, "-") + "-" + utilrand.String(5)
}
