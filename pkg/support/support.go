// Package support decides what devicefit can do on one control plane: whether
// its Kubernetes minor is supported at all, which minor the scheduler must
// emulate there, and which device features that control plane serves.
//
// One binary serves every supported minor. The Kubernetes version skew
// policy forbids a kube-scheduler newer than the kube-apiserver; upstream's
// answer is compatibility versions (KEP-4330): a binary can emulate up to
// three minors before its own (--emulated-version), and then its feature
// gates take that minor's defaults, so its informers list only APIs that
// minor serves by default. devicefit builds on exactly that: it reads the API
// server's version before the scheduler starts and emulates that minor when
// it is older than the binary, rather than being built once per minor (as
// sigs.k8s.io/scheduler-plugins is), which would mean one go.mod per minor.
// What the emulated defaults cannot know (a beta API a cluster turned off,
// an alpha gate a user turned on) the served-API check covers: a gate whose
// informer needs a resource the server does not list is turned off before
// any informer starts, with one log line.
package support

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/version"
	baseversion "k8s.io/component-base/version"
)

// supportedMinors is how many minors, the binary's own included, are tested
// (test/e2e/skew) and supported. Upstream emulates one more (n-3); devicefit
// does not claim what it does not test.
const supportedMinors = 3

// Range is the oldest and the newest control-plane minor this build
// supports: the Kubernetes minor it is built from (go.mod's k8s.io/kubernetes,
// which component-base/version names) and the two before it. Bumping go.mod
// moves the range; nothing else here names a minor.
func Range() (oldest, newest *version.Version) {
	newest = version.MustParse(baseversion.DefaultKubeBinaryVersion)
	oldest = version.MajorMinor(newest.Major(), newest.Minor()-(supportedMinors-1))
	return oldest, newest
}

// RangeString is the range as users read it, e.g. "1.35 to 1.37".
func RangeString() string {
	oldest, newest := Range()
	return fmt.Sprintf("%d.%d to %d.%d", oldest.Major(), oldest.Minor(), newest.Major(), newest.Minor())
}

// Emulation is the minor the scheduler emulates against a server of
// version server: requested (--emulated-version) when set, else the
// server's minor when it is older than the binary's, else nil (the binary's
// own). It refuses a server outside Range and a requested minor newer than
// the server.
//
// A server one minor newer than the binary is accepted: the skew policy lets
// kube-scheduler be one minor older than kube-apiserver, which is where a
// cluster is between upgrading its control plane and upgrading devicefit.
func Emulation(server, requested *version.Version) (*version.Version, error) {
	oldest, newest := Range()
	minor := version.MajorMinor(server.Major(), server.Minor())
	switch {
	case minor.LessThan(oldest):
		return nil, fmt.Errorf("the API server is Kubernetes %s, older than devicefit supports: this build supports control planes %s; "+
			"use a devicefit release built for %d.%d, or upgrade the control plane", server, RangeString(), minor.Major(), minor.Minor())
	case minor.GreaterThan(version.MajorMinor(newest.Major(), newest.Minor()+1)):
		return nil, fmt.Errorf("the API server is Kubernetes %s, newer than devicefit supports: this build supports control planes %s "+
			"(and one minor newer while devicefit is upgraded); upgrade devicefit", server, RangeString())
	}
	if requested != nil {
		if requested.GreaterThan(minor) {
			return nil, fmt.Errorf("--emulated-version=%d.%d is newer than the API server (Kubernetes %s): kube-scheduler must not be newer "+
				"than kube-apiserver (version skew policy); leave the flag out and devicefit emulates the server's minor", requested.Major(), requested.Minor(), server)
		}
		return requested, nil
	}
	if minor.LessThan(newest) {
		return minor, nil
	}
	return nil, nil
}
