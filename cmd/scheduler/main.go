// Command devicefit-scheduler is the upstream kube-scheduler with the
// devicefit plugins compiled in. Pods opt in with spec.schedulerName.
package main

import (
	"os"

	"github.com/spf13/cobra"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/devicefit/devicefit/pkg/plugins/devicefit"
	"github.com/devicefit/devicefit/pkg/plugins/devicepack"
)

func main() {
	os.Exit(cli.Run(newCommand()))
}

func newCommand() *cobra.Command {
	command := app.NewSchedulerCommand(
		app.WithPlugin(devicefit.Name, devicefit.New),
		app.WithPlugin(devicepack.Name, devicepack.New),
	)
	command.PersistentPreRunE = beforeScheduler(command.PersistentPreRunE, []string{devicefit.Name, devicepack.Name})
	return command
}
