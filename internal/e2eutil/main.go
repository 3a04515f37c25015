package e2eutil

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/devicefit/devicefit/internal/controlplane"
)

// Options configure Main.
type Options struct {
	// Name is the test package as its messages name it, e.g.
	// "test/e2e/faults"; its control plane's directory is
	// devicefit-e2e-faults-* in the temporary directory.
	Name string
	// Target is the make target that builds and passes what the package
	// needs, e.g. "make test-faults", for the message when it is missing.
	Target string
	// InstallManifests installs the manifests (InstallManifests) before
	// Setup; a failure ends the run. test/e2e records its failures instead,
	// for TestManifestsApply to report, and leaves this off.
	InstallManifests bool
	// Components are components of manifests/components that the
	// manifests installed (InstallManifests) or built (Env.Kustomization)
	// add to the base, e.g. "routing": the base installs on the oldest
	// supported minor, and the package's control plane (bin/, the newest)
	// serves more. Not used with DEVICEFIT_MANIFESTS, a directory tested as
	// it is.
	Components []string
	// Controllers, when not empty, are the kube-controller-manager
	// controllers to start (ControlPlane.StartControllerManager) before
	// Setup.
	Controllers []string
	// Setup, when not nil, runs once everything above is up, before the
	// tests, e.g. to start a scheduler the package shares. An error ends
	// the run, the logs kept.
	Setup func(ctx context.Context) error
}

// Env is what Main started for a test package: one control plane, shared
// by all of its tests. A package declares one (var env e2eutil.Env) and
// calls its Main from TestMain.
type Env struct {
	// BinDir is DEVICEFIT_BIN_DIR; CRDDir is PROMETHEUS_OPERATOR_CRDS.
	BinDir, CRDDir string
	// Manifests is the kustomize directory under test: DEVICEFIT_MANIFESTS,
	// else manifests/ of the repository.
	Manifests string
	// Kustomization is the directory `kubectl kustomize` builds: Manifests
	// with Options.Components (a kustomization in Dir), else Manifests.
	Kustomization string
	// Dir holds the control plane's state, kubeconfigs, certificates and
	// the log of every process; it is removed when every test passed.
	Dir string
	CP  *controlplane.ControlPlane
	// Objects are the objects applied, with Options.InstallManifests.
	Objects []*unstructured.Unstructured

	mu       sync.Mutex
	cleanups []func()
}

// setupTimeout bounds the control plane's start, the manifests' install
// and Setup together.
const setupTimeout = 3 * time.Minute

// Main is a test package's TestMain: it fills e and starts etcd and kube-apiserver
// from DEVICEFIT_BIN_DIR once for the package (StartControlPlane), installs
// the manifests and starts the controllers asked for, runs Setup, the
// tests, the cleanups (Env.Cleanup), stops the control plane and exits.
// The directory is removed when every test passed and kept otherwise.
//
// Without DEVICEFIT_BIN_DIR (a plain `go test ./...`) the package is
// skipped with a message naming the make target: these tests need bin/.
// With it but without PROMETHEUS_OPERATOR_CRDS the run fails: that is a
// broken invocation, not a machine without binaries.
func (e *Env) Main(m *testing.M, o Options) {
	os.Exit(e.run(m, o))
}

func (e *Env) run(m *testing.M, o Options) int {
	err := e.fromVariables(o)
	if errors.Is(err, errSkip) {
		fmt.Fprintf(os.Stderr, "%s: SKIP: %s is not set. These tests run the built binaries of bin/ with the\n"+
			"%s: manifests applied on the prometheus-operator CRDs: run `%s`, which builds and provides them.\n",
			o.Name, BinDirEnv, o.Name, o.Target)
		return 0
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", o.Name, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	name := strings.ReplaceAll(strings.TrimPrefix(o.Name, "test/"), "/", "-")
	cp, dir, err := StartControlPlane(ctx, name, e.BinDir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", o.Name, err)
		return 1
	}
	e.CP, e.Dir = cp, dir
	if err := e.setUp(ctx, o); err != nil {
		e.runCleanups()
		cp.Stop()
		fmt.Fprintf(os.Stderr, "%s: %v\n%s: logs kept in %s\n", o.Name, err, o.Name, dir)
		return 1
	}

	code := m.Run()

	e.runCleanups()
	cp.Stop()
	if code == 0 {
		os.RemoveAll(dir)
	} else {
		fmt.Fprintf(os.Stderr, "%s: FAILED; logs of every process kept in %s\n", o.Name, dir)
	}
	return code
}

// errSkip: no DEVICEFIT_BIN_DIR, the package is skipped.
var errSkip = errors.New("skip")

// fromVariables reads the environment make passes.
func (e *Env) fromVariables(o Options) error {
	e.BinDir, e.CRDDir, e.Manifests = os.Getenv(BinDirEnv), os.Getenv(CRDDirEnv), os.Getenv(ManifestsEnv)
	if e.BinDir == "" {
		return errSkip
	}
	if e.CRDDir == "" {
		return fmt.Errorf("%s is set but %s is not: run `%s`, which sets both", BinDirEnv, CRDDirEnv, o.Target)
	}
	if e.Manifests == "" {
		root, err := ModuleRoot()
		if err != nil {
			return err
		}
		e.Manifests = filepath.Join(root, "manifests")
	}
	return nil
}

func (e *Env) setUp(ctx context.Context, o Options) error {
	e.Kustomization = e.Manifests
	what := e.Manifests
	if len(o.Components) > 0 && os.Getenv(ManifestsEnv) == "" {
		dir, err := Kustomization(filepath.Join(e.Dir, "kustomize"), e.Manifests, o.Components)
		if err != nil {
			return fmt.Errorf("%s with components %v: %w", e.Manifests, o.Components, err)
		}
		e.Kustomization = dir
		what = fmt.Sprintf("%s with components %v", e.Manifests, o.Components)
	}
	if o.InstallManifests {
		objects, err := InstallManifests(ctx, e.Kubectl("kubectl"), e.CRDDir, e.Kustomization)
		if err != nil {
			return fmt.Errorf("installing %s: %w", what, err)
		}
		e.Objects = objects
		fmt.Printf("%s: %d objects of %s applied\n", o.Name, len(objects), what)
	}
	if len(o.Controllers) > 0 {
		if err := e.CP.StartControllerManager(ctx, o.Controllers...); err != nil {
			return err
		}
	}
	if o.Setup != nil {
		return o.Setup(ctx)
	}
	return nil
}

// ModuleRoot is the directory of go.mod above the working directory (go
// test runs a test binary in its package's directory): the repository,
// with manifests/ and charts/.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory: where is manifests/?")
		}
		dir = parent
	}
}

// Cleanup registers f to run once the package's tests are over, before
// the control plane stops; cleanups run last registered first, as
// testing.T's do. For what outlives one test: a scheduler the whole
// package shares.
func (e *Env) Cleanup(f func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.cleanups = append(e.cleanups, f)
}

func (e *Env) runCleanups() {
	e.mu.Lock()
	fs := e.cleanups
	e.cleanups = nil
	e.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}

// Kubectl runs binary of BinDir ("kubectl", "kubectl-devicefit") with the
// admin kubeconfig.
func (e *Env) Kubectl(binary string) Kubectl {
	return Kubectl{Binary: filepath.Join(e.BinDir, binary), Kubeconfig: e.CP.AdminKubeconfig}
}
