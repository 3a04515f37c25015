package support

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
)

// fakeServer is discovery that answers with gitVersion and resources.
func fakeServer(gitVersion string, lists ...*metav1.APIResourceList) *fakediscovery.FakeDiscovery {
	dc := fake.NewClientset().Discovery().(*fakediscovery.FakeDiscovery)
	dc.FakedServerVersion = &version.Info{GitVersion: gitVersion}
	dc.Resources = lists
	return dc
}

func TestDiscoverReadsResources(t *testing.T) {
	dc := fakeServer("v1.35.4", &metav1.APIResourceList{GroupVersion: "resource.k8s.io/v1", APIResources: []metav1.APIResource{
		{Name: "resourceslices"}, {Name: "resourceclaims"}, {Name: "resourceclaims/status"},
	}})
	c, err := Discover(dc)
	if err != nil {
		t.Fatal(err)
	}
	if c.Minor() != "v1.35" {
		t.Errorf("Minor() = %s, want v1.35", c.Minor())
	}
	for r, want := range map[string]bool{"resourceslices": true, "resourceclaims": true, "resourceclaims/status": false, "devicetaintrules": false} {
		if got := c.Serves(schema.GroupVersionResource{Group: "resource.k8s.io", Version: "v1", Resource: r}); got != want {
			t.Errorf("Serves(%s) = %v, want %v", r, got, want)
		}
	}
}

// TestDiscoverWithRetryStopsOnAnUnreadableVersion: retrying cannot change a
// version the server reports wrongly; the wait ends at once with the reason.
func TestDiscoverWithRetryStopsOnAnUnreadableVersion(t *testing.T) {
	dc := fakeServer("latest")
	_, err := DiscoverWithRetry(context.Background(), dc, time.Minute)
	if err == nil || !strings.Contains(err.Error(), `reports version "latest"`) {
		t.Fatalf("err = %v; want the unreadable version named", err)
	}
	var asked int
	for _, a := range dc.Actions() {
		if a.GetResource().Resource == "version" {
			asked++
		}
	}
	if asked != 1 {
		t.Errorf("asked the version %d times; want once", asked)
	}
}
