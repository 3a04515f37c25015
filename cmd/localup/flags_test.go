package main

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/version"
	baseversion "k8s.io/component-base/version"

	"github.com/devicefit/devicefit/internal/cmdflags/cmdflagstest"
	"github.com/devicefit/devicefit/internal/localup"
	"github.com/devicefit/devicefit/pkg/support"
)

func TestParseFlags(t *testing.T) {
	oldest, newest := support.Range()
	minor := func(v *version.Version) string { return fmt.Sprintf("%d.%d", v.Major(), v.Minor()) }
	defaults := localup.Options{BinDir: "bin", Config: "manifests/scheduler-config.yaml", Timeout: 3 * time.Minute, Seed: 42, Grace: 10 * time.Second,
		KubeVersion: minor(newest)}
	tests := []struct {
		name       string
		args       []string
		want       localup.Options
		wantCode   int
		wantExit   bool
		wantStdout string // "help": the help, checked against newFlags
	}{
		{name: "defaults", want: defaults},
		{name: "own flags", args: []string{"--keep", "--seed", "7", "--bin-dir", "/opt/bin"}, want: func() localup.Options { o := defaults; o.Keep, o.Seed, o.BinDir = true, 7, "/opt/bin"; return o }()},
		{name: "oldest control plane", args: []string{"--kube-version", minor(oldest)},
			want: func() localup.Options { o := defaults; o.KubeVersion = minor(oldest); return o }()},
		{name: "control plane older than supported", args: []string{"--kube-version", minor(oldest.SubtractMinor(1))}, wantExit: true, wantCode: 2},
		{name: "control plane newer than the binaries", args: []string{"--kube-version", minor(newest.AddMinor(1))}, wantExit: true, wantCode: 2},
		{name: "a patch release is no minor", args: []string{"--kube-version", minor(oldest) + ".4"}, wantExit: true, wantCode: 2},
		{name: "gangs need the newest", args: []string{"--workload", "--kube-version", minor(oldest)}, wantExit: true, wantCode: 2},
		{name: "gangs on the newest", args: []string{"--workload"}, want: func() localup.Options { o := defaults; o.Workload = true; return o }()},
		{name: "help", args: []string{"--help"}, wantExit: true, wantStdout: "help"},
		{name: "version", args: []string{"--version"}, wantExit: true, wantStdout: "localup " + baseversion.Get().GitVersion + "\n"},
		{name: "bad flag", args: []string{"--bogus"}, wantExit: true, wantCode: 2},
		{name: "stray argument", args: []string{"extra"}, wantExit: true, wantCode: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			got, code, exit := parseFlags(tc.args, &stdout, &stderr)
			if diff := cmp.Diff([]any{tc.wantExit, tc.wantCode}, []any{exit, code}); diff != "" {
				t.Fatalf("exit, code (-want,+got):\n%s\nstderr:\n%s", diff, stderr.String())
			}
			switch {
			case !exit:
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("options (-want,+got):\n%s", diff)
				}
			case tc.wantStdout == "help":
				var o localup.Options
				cmdflagstest.CheckHelp(t, newFlags(&o), stdout.String())
			default:
				if diff := cmp.Diff(tc.wantStdout, stdout.String()); diff != "" {
					t.Errorf("stdout (-want,+got):\n%s", diff)
				}
			}
		})
	}
}
