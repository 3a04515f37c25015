// Package cmdflags gives devicefit's flag-driven commands (localup, replay)
// the command line of a Kubernetes component: flags in named sections, the
// command's own first, then klog's, then --help and --version, printed by
// component-base's cliflag.PrintSections as kube-scheduler prints its help.
// --version reports k8s.io/component-base/version, which hack/version.sh
// stamps into every devicefit binary, so all of them name the same build.
package cmdflags

import (
	"flag"
	"fmt"
	"io"

	"github.com/spf13/pflag"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/term"
	"k8s.io/component-base/version"
	"k8s.io/klog/v2"
)

// Command is the flags of one command, in sections.
type Command struct {
	name, usage   string
	sections      cliflag.NamedFlagSets
	help, version bool
}

// New returns the flags of the command name, whose usage line is usage
// (several lines allowed). Its own flags go into Flags; klog's are added.
func New(name, usage string) *Command {
	c := &Command{name: name, usage: usage}
	// Creating the sections fixes their order.
	c.sections.FlagSet(name)
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	c.sections.FlagSet("logging").AddGoFlagSet(klogFlags)
	global := c.sections.FlagSet("global")
	global.BoolVarP(&c.help, "help", "h", false, "print this help and exit")
	global.BoolVar(&c.version, "version", false, "print the version and exit")
	return c
}

// Flags is the command's own section, printed first.
func (c *Command) Flags() *pflag.FlagSet { return c.sections.FlagSet(c.name) }

// Sections are the flag sections in the order of the help.
func (c *Command) Sections() cliflag.NamedFlagSets { return c.sections }

// Usage prints the usage line and every section to w.
func (c *Command) Usage(w io.Writer) {
	cols, _, _ := term.TerminalSize(w)
	fmt.Fprintf(w, "Usage:\n  %s\n", c.usage)
	cliflag.PrintSections(w, c.sections, cols)
}

// Parse parses args. When exit is true the command is done and should exit
// with code: 0 after printing the help or the version to out, 2 after a bad
// flag (the error goes to errOut), as flag.ExitOnError does.
// Otherwise it returns the arguments left after the flags.
func (c *Command) Parse(args []string, out, errOut io.Writer) (rest []string, code int, exit bool) {
	fs := pflag.NewFlagSet(c.name, pflag.ContinueOnError)
	for _, name := range c.sections.Order {
		fs.AddFlagSet(c.sections.FlagSets[name])
	}
	fs.SetOutput(errOut)
	if err := fs.Parse(args); err != nil {
		fmt.Fprintf(errOut, "%s: %v\nRun '%s --help' for usage.\n", c.name, err, c.name)
		return nil, 2, true
	}
	switch {
	case c.help:
		c.Usage(out)
		return nil, 0, true
	case c.version:
		fmt.Fprintf(out, "%s %s\n", c.name, version.Get().GitVersion)
		return nil, 0, true
	}
	return fs.Args(), 0, false
}
