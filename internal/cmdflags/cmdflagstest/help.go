// Package cmdflagstest checks a command's help against its cmdflags.Command,
// for the tests of the commands that use it.
package cmdflagstest

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/devicefit/devicefit/internal/cmdflags"
)

// CheckHelp fails t unless help (the command's --help output) prints the
// sections of cmd in their order, the command's own first, with each flag
// under its own section and described in one line.
func CheckHelp(t *testing.T, cmd *cmdflags.Command, help string) {
	t.Helper()
	sections := cmd.Sections()
	if len(sections.Order) == 0 || sections.Order[len(sections.Order)-1] != "global" || sections.Order[1] != "logging" {
		t.Fatalf("sections %q, want the command's own, logging, global", sections.Order)
	}
	// Where each section's text starts and ends in help.
	starts := make([]int, len(sections.Order)+1)
	for i, name := range sections.Order {
		title := "\n" + strings.ToUpper(name[:1]) + name[1:] + " flags:\n"
		starts[i] = strings.Index(help, title)
		if starts[i] < 0 || (i > 0 && starts[i] < starts[i-1]) {
			t.Fatalf("help lacks %q after the previous section:\n%s", title, help)
		}
	}
	starts[len(sections.Order)] = len(help)
	for i, name := range sections.Order {
		text := help[starts[i]:starts[i+1]]
		sections.FlagSets[name].VisitAll(func(f *pflag.Flag) {
			if f.Usage == "" || strings.Contains(f.Usage, "\n") {
				t.Errorf("--%s: usage %q, want one line", f.Name, f.Usage)
			}
			if !strings.Contains(text, "--"+f.Name+" ") && !strings.HasSuffix(text, "--"+f.Name+"\n") && !strings.Contains(text, "--"+f.Name+"\n") {
				t.Errorf("--%s is not listed under %q:\n%s", f.Name, name, text)
			}
		})
	}
}
