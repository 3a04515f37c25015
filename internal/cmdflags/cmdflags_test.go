package cmdflags

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/component-base/version"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantRest   []string
		wantCode   int
		wantExit   bool
		wantStdout string // exact, unless wantInStdout
		// wantInStdout lists texts the stdout has in this order.
		wantInStdout []string
		wantStderr   string
		wantCount    int
	}{
		{name: "own flag and arguments", args: []string{"--count", "3", "a", "b"}, wantRest: []string{"a", "b"}, wantCount: 3},
		{name: "klog flag", args: []string{"-v", "4"}, wantRest: []string{}},
		{name: "version", args: []string{"--version"}, wantExit: true, wantStdout: "demo " + version.Get().GitVersion + "\n"},
		{
			name: "help", args: []string{"-h"}, wantExit: true,
			wantInStdout: []string{"Usage:\n  demo [flags]\n", "\nDemo flags:\n", "--count int", "how many", "\nLogging flags:\n", "-v, --v Level", "\nGlobal flags:\n", "-h, --help", "--version"},
		},
		{name: "unknown flag", args: []string{"--bogus"}, wantExit: true, wantCode: 2, wantStderr: "demo: unknown flag: --bogus\nRun 'demo --help' for usage.\n"},
		{name: "bad value", args: []string{"--count", "x"}, wantExit: true, wantCode: 2, wantStderr: "demo: invalid argument \"x\" for \"--count\" flag: strconv.ParseInt: parsing \"x\": invalid syntax\nRun 'demo --help' for usage.\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := New("demo", "demo [flags]")
			count := c.Flags().Int("count", 0, "how many")
			var stdout, stderr bytes.Buffer
			rest, code, exit := c.Parse(tc.args, &stdout, &stderr)
			if diff := cmp.Diff([]any{tc.wantExit, tc.wantCode}, []any{exit, code}); diff != "" {
				t.Errorf("exit, code (-want,+got):\n%s", diff)
			}
			if !exit {
				if diff := cmp.Diff(tc.wantRest, rest); diff != "" {
					t.Errorf("rest (-want,+got):\n%s", diff)
				}
				if *count != tc.wantCount {
					t.Errorf("--count %d, want %d", *count, tc.wantCount)
				}
			}
			if tc.wantInStdout == nil {
				if diff := cmp.Diff(tc.wantStdout, stdout.String()); diff != "" {
					t.Errorf("stdout (-want,+got):\n%s", diff)
				}
			}
			out := stdout.String()
			for _, want := range tc.wantInStdout {
				i := strings.Index(out, want)
				if i < 0 {
					t.Fatalf("stdout lacks %q where expected:\n%s", want, stdout.String())
				}
				out = out[i+len(want):]
			}
			if diff := cmp.Diff(tc.wantStderr, stderr.String()); diff != "" {
				t.Errorf("stderr (-want,+got):\n%s", diff)
			}
		})
	}
}
