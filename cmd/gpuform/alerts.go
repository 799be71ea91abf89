package main

import (
	"bytes"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuform/gpuform/provision/verify/alerts"
)

func newAlertsCommand(s Streams) *cobra.Command {
	var flags specFlags
	var out string
	var o alerts.Options
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
			if o.CheckFailingFor < time.Minute || o.For < 0 {
				return fmt.Errorf("-check-for must be at least 1m and -for not negative")
			}
			cfg, diags := flags.loadPinned(s, dirArg(args))
			if err := reportLoad(s, diags, cfg, false); err != nil {
				return err
			}
			var b bytes.Buffer
			if err := alerts.Write(&b, alerts.Rules(cfg, o)); err != nil {
				return err
			}
			if out == "" {
				_, err := s.Out.Write(b.Bytes())
				return err
			}
			if err := writeNewFile(out, b.Bytes()); err != nil {
				return fmt.Errorf("-out: %w", err)
			}
			fmt.Fprintf(s.Out, "Alerting rules written to %s.\n", out)
			return nil
		},
	}
	flags.register(cmd.Flags())
	cmd.Flags().StringVar(&out, "out", "", "write the rules to FILE (atomically) instead of standard output")
	cmd.Flags().DurationVar(&o.CheckFailingFor, "check-for", 15*time.Minute, "how long a verify check must fail before GPUFormCheckFailing fires")
	cmd.Flags().DurationVar(&o.For, "for", 5*time.Minute, "how long a hardware condition (temperature, NVLink, pending remap) must hold before its alert fires")
	return cmd
}
