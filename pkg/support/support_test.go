package support

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/version"
)

func TestRangeFollowsTheBinary(t *testing.T) {
	oldest, newest := Range()
	if newest.Minor()-oldest.Minor() != supportedMinors-1 || oldest.Major() != 1 {
		t.Errorf("Range() = %s, %s; want %d minors of Kubernetes 1", oldest, newest, supportedMinors)
	}
}

func TestEmulation(t *testing.T) {
	oldest, newest := Range()
	minor := func(delta uint) *version.Version { return version.MajorMinor(1, newest.Minor()-delta) }
	patch := func(v *version.Version) *version.Version { return v.WithPatch(4) }
	newer := version.MajorMinor(1, newest.Minor()+1)
	for _, tc := range []struct {
		name              string
		server, requested *version.Version
		want              *version.Version
		err               string
	}{
		{name: "same minor: the binary's own", server: patch(newest)},
		{name: "one minor older: emulated", server: patch(minor(1)), want: minor(1)},
		{name: "oldest supported: emulated", server: patch(oldest), want: oldest},
		{name: "one minor newer: skew policy allows", server: patch(newer)},
		{name: "older than supported", server: patch(minor(supportedMinors)), err: "older than devicefit supports: this build supports control planes " + RangeString()},
		{name: "two minors newer", server: patch(version.MajorMinor(1, newest.Minor()+2)), err: "newer than devicefit supports"},
		{name: "requested and allowed", server: patch(newest), requested: minor(1), want: minor(1)},
		{name: "requested newer than the server", server: patch(minor(1)), requested: newest, err: "kube-scheduler must not be newer than kube-apiserver"},
		{name: "a vendor's version", server: version.MustParseSemantic("v" + minor(1).String() + ".4-eks-4a8d3c1"), want: minor(1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Emulation(tc.server, tc.requested)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Emulation(%s, %v) = %v, %v; want an error with %q", tc.server, tc.requested, got, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (got == nil) != (tc.want == nil) || (got != nil && !got.EqualTo(tc.want)) {
				t.Errorf("Emulation(%s, %v) = %v; want %v", tc.server, tc.requested, got, tc.want)
			}
		})
	}
}

func TestParseServerVersion(t *testing.T) {
	for in, want := range map[string]string{
		"v1.35.4":           "1.35.4",
		"v1.35.4-gke.1200":  "1.35.4",
		"v1.36.3+k3s1":      "1.36.3",
		"v1.37.2-eks-4a8d3": "1.37.2",
	} {
		c, err := NewCluster(in)
		if err != nil {
			t.Errorf("NewCluster(%q): %v", in, err)
			continue
		}
		if got := version.MajorMinor(c.Version.Major(), c.Version.Minor()).WithPatch(c.Version.Patch()).String(); got != want {
			t.Errorf("NewCluster(%q).Version = %s; want %s", in, got, want)
		}
	}
	// An apiserver built without version ldflags: refused by range, not
	// mistaken for a supported release.
	if c, err := NewCluster("v0.0.0-master+$Format:%H$"); err == nil {
		if _, err := Emulation(c.Version, nil); err == nil {
			t.Error("an unstamped v0.0.0 server was accepted")
		}
	}
	if _, err := NewCluster("latest"); err == nil {
		t.Error(`NewCluster("latest") parsed`)
	}
}
