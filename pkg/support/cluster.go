package support

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/klog/v2"
)

// Cluster is what Discover read off an API server: its version and the
// resources it lists in discovery.
type Cluster struct {
	// Version is the server's, e.g. 1.35.4; GitVersion as it reported it,
	// e.g. "v1.35.4" or a vendor's "v1.35.4-gke.1200".
	Version    *version.Version
	GitVersion string
	served     map[schema.GroupVersionResource]bool
}

// NewCluster is a Cluster of the given version serving exactly resources:
// for tests and for callers that already hold discovery's answer.
func NewCluster(gitVersion string, resources ...schema.GroupVersionResource) (*Cluster, error) {
	v, err := parseServerVersion(gitVersion)
	if err != nil {
		return nil, err
	}
	c := &Cluster{Version: v, GitVersion: gitVersion, served: map[schema.GroupVersionResource]bool{}}
	for _, r := range resources {
		c.served[r] = true
	}
	return c, nil
}

// Serves says whether discovery lists the resource (subresources are not
// resources here).
func (c *Cluster) Serves(r schema.GroupVersionResource) bool { return c.served[r] }

// Minor is the server's major.minor as the messages print it, e.g. "v1.35".
func (c *Cluster) Minor() string { return fmt.Sprintf("v%d.%d", c.Version.Major(), c.Version.Minor()) }

// Discover reads the server's version and its resources. A group version
// that fails discovery (an aggregated API that is down) is left out, as
// kubectl does; the groups devicefit asks about are built in, never
// aggregated.
func Discover(dc discovery.DiscoveryInterface) (*Cluster, error) {
	info, err := dc.ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("reading the API server's version: %w", err)
	}
	c, err := NewCluster(info.GitVersion)
	if err != nil {
		return nil, err
	}
	_, lists, err := dc.ServerGroupsAndResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, fmt.Errorf("reading the API server's resources: %w", err)
	}
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range list.APIResources {
			if !strings.Contains(r.Name, "/") {
				c.served[gv.WithResource(r.Name)] = true
			}
		}
	}
	return c, nil
}

// DiscoverWithRetry is Discover, retried while the server cannot be reached
// (a control plane that is restarting, a scheduler that starts first), for
// up to timeout. Each failure is logged with what devicefit waits for. An
// answer retrying cannot change (unauthorized, forbidden, a version it
// cannot parse) ends the wait at once.
func DiscoverWithRetry(ctx context.Context, dc discovery.DiscoveryInterface, timeout time.Duration) (*Cluster, error) {
	logger := klog.FromContext(ctx)
	var c *Cluster
	var last error
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, timeout, true, func(context.Context) (bool, error) {
		c, last = Discover(dc)
		if last == nil {
			return true, nil
		}
		var unparsable *versionError
		if errors.As(last, &unparsable) || apierrors.IsUnauthorized(last) || apierrors.IsForbidden(last) {
			return false, last
		}
		logger.Info("Waiting for the API server: devicefit reads its version to choose the Kubernetes minor to emulate", "err", last)
		return false, nil
	})
	if err != nil && last != nil {
		return nil, last
	}
	return c, err
}

// versionError: the server reported a version devicefit cannot read.
type versionError struct{ gitVersion string }

func (e *versionError) Error() string {
	return fmt.Sprintf("the API server reports version %q, which is not a Kubernetes release version", e.gitVersion)
}

// parseServerVersion reads a server's gitVersion; vendors append their own
// pre-release or build parts ("v1.35.4-eks-4a8d3c1", "v1.35.4+k3s1").
func parseServerVersion(gitVersion string) (*version.Version, error) {
	if v, err := version.ParseSemantic(gitVersion); err == nil {
		return v, nil
	}
	if v, err := version.ParseGeneric(gitVersion); err == nil {
		return v, nil
	}
	return nil, &versionError{gitVersion}
}
