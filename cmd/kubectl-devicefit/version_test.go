package main

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/component-base/version"
)

// --version reports the component-base version hack/version.sh stamps into
// every devicefit binary, without reading a kubeconfig.
func TestVersion(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "root", args: []string{"--version"}, want: "kubectl devicefit version " + version.Get().GitVersion + "\n"},
		{name: "with a kubeconfig flag", args: []string{"--kubeconfig", "/nonexistent", "--version"}, want: "kubectl devicefit version " + version.Get().GitVersion + "\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := run(genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut}, tc.args); code != 0 {
				t.Fatalf("exit code %d, stderr:\n%s", code, errOut.String())
			}
			if diff := cmp.Diff(tc.want, out.String()); diff != "" {
				t.Errorf("stdout (-want,+got):\n%s", diff)
			}
		})
	}
}
