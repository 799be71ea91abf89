package main

import (
	"bytes"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpuform/gpuform/provision/verify/alerts"
)

// alertsArguments are the arguments of gpuform alerts.
type alertsArguments struct {
	// Dir is the spec directory, "." when omitted.
	Dir string
	// Spec are -var and -var-file.
	Spec specFlags
	// OutPath is -out: the file the rules are written to, "" for standard
	// output.
	OutPath string
	// Options are -check-for and -for.
	Options alerts.Options
}

func (a *alertsArguments) register(fs *pflag.FlagSet) {
	a.Spec.register(fs)
	fs.StringVar(&a.OutPath, "out", "", "write the rules to FILE (atomically) instead of standard output")
	fs.DurationVar(&a.Options.CheckFailingFor, "check-for", 15*time.Minute, "how long a verify check must fail before GPUFormCheckFailing fires")
	fs.DurationVar(&a.Options.For, "for", 5*time.Minute, "how long a hardware condition (temperature, NVLink, pending remap) must hold before its alert fires")
}

// finish checks -check-for and -for and takes the spec directory.
func (a *alertsArguments) finish(_ *pflag.FlagSet, args []string) error {
	if a.Options.CheckFailingFor < time.Minute || a.Options.For < 0 {
		return fmt.Errorf("-check-for must be at least 1m and -for not negative")
	}
	a.Dir = dirArg(args)
	return nil
}

// parseAlertsArguments parses gpuform alerts's command line (after
// "alerts").
func parseAlertsArguments(args []string) (*alertsArguments, error) {
	a := &alertsArguments{}
	return a, parseArguments(args, a.register, maxOneDir, a.finish)
}

func newAlertsCommand(s Streams) *cobra.Command {
	a := &alertsArguments{}
	cmd := &cobra.Command{
		Use:   "alerts [DIR]",
		Short: "Write Prometheus alerting rules derived from the spec",
		Long: `Alerts writes Prometheus alerting rules (YAML, for rule_files) derived from
the spec in DIR, one group per node block, over the metrics that
"gpuform verify -format prometheus" writes for node_exporter's textfile
collector: a GPU above the spec's verify { nvml { max_temperature_c } },
uncorrectable ECC errors, a failed or pending row remap, an NVLink down
where the spec wants every link active, a driver that is not the pinned
one, and any verify check failing for -check-for (default 15m).

The rules pass "promtool check rules". Values the spec marks sensitive
are left out of the rules.

Exit status: 0 written, 1 invalid spec or bad flag.`,
		Args: maxOneDir,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := a.finish(cmd.Flags(), args); err != nil {
				return err
			}
			v := alertsView{humanOperation{s}}
			rules, err := runAlerts(s, a, v)
			if err != nil {
				return err
			}
			return v.Rules(rules, a.OutPath)
		},
	}
	a.register(cmd.Flags())
	return cmd
}

// runAlerts is gpuform alerts's work: it loads the spec, pinned by its
// lock file, and returns the rules derived from it.
func runAlerts(s Streams, a *alertsArguments, v operationView) (alerts.File, error) {
	cfg, diags := a.Spec.loadPinned(s, a.Dir)
	if err := v.Diagnostics(diags, cfg); err != nil {
		return alerts.File{}, err
	}
	return alerts.Rules(cfg, a.Options), nil
}

// alertsView writes the rules as YAML.
type alertsView struct{ humanOperation }

// Rules writes the rules to standard output, or to the file out and says
// so.
func (v alertsView) Rules(rules alerts.File, out string) error {
	var b bytes.Buffer
	if err := alerts.Write(&b, rules); err != nil {
		return err
	}
	if out == "" {
		_, err := v.s.Out.Write(b.Bytes())
		return err
	}
	if err := writeNewFile(out, b.Bytes()); err != nil {
		return fmt.Errorf("-out: %w", err)
	}
	fmt.Fprintf(v.s.Out, "Alerting rules written to %s.\n", out)
	return nil
}
