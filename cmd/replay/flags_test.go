package main

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/component-base/version"

	"github.com/devicefit/devicefit/internal/cmdflags/cmdflagstest"
)

func TestHelpAndVersion(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantStdout string // empty: the help, checked against newFlags
	}{
		{name: "help", args: []string{"--help"}},
		{name: "short help", args: []string{"-h"}},
		{name: "version", args: []string{"--version"}, wantStdout: "replay " + version.Get().GitVersion + "\n"},
		{name: "version wins over the other flags", args: []string{"--nodes", "x.csv", "--version"}, wantStdout: "replay " + version.Get().GitVersion + "\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(tc.args, &stdout, &stderr); code != 0 {
				t.Fatalf("exit code %d, stderr:\n%s", code, stderr.String())
			}
			if tc.wantStdout == "" {
				cmdflagstest.CheckHelp(t, newFlags(), stdout.String())
				return
			}
			if diff := cmp.Diff(tc.wantStdout, stdout.String()); diff != "" {
				t.Errorf("stdout (-want,+got):\n%s", diff)
			}
		})
	}
}
