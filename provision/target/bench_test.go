package target_test

import (
	"context"
	"fmt"
	"maps"
	"os/exec"
	"testing"

	"github.com/gpuform/gpuform/internal/procmeter"
	"github.com/gpuform/gpuform/internal/sshtest"
	"github.com/gpuform/gpuform/provision/connect"
	"github.com/gpuform/gpuform/provision/fleet"
	"github.com/gpuform/gpuform/provision/sim"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/transport"
	"github.com/gpuform/gpuform/spec"
)

// benchFleet is one set of real sshds (4 servers, 50 host aliases) that
// every benchmark of this file shares, with a simulated HGX H100 root the
// probe reads through the root prefix: sshd, the login and the probe's
// shell are real, only the files are simulated.
type benchFleet struct {
	fl   *sshtest.Fleet
	root string
}

func startBenchFleet(b *testing.B) *benchFleet {
	b.Helper()
	root, err := sim.Materialize("hgx-h100-stale", b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	return &benchFleet{fl: sshtest.StartFleet(b, 4, 50, sshtest.Options{}), root: root}
}

// options are the target options facts uses, connecting as the CLI does
// (a connect.Opener with the fleet's ssh_config and known_hosts), every
// command run under the simulated root.
func (f *benchFleet) options() target.Options {
	co := connect.Options{
		SSHConfigPath:   f.fl.ConfigFile,
		KnownHostsFiles: []string{f.fl.KnownHostsFile},
		Getenv:          func(string) string { return "" },
	}
	op := connect.NewOpener(co)
	return target.Options{Connect: func(ctx context.Context, h spec.Host) (transport.Transport, error) {
		t, err := op.Open(ctx, h)
		if err != nil {
			return nil, err
		}
		return rooted{t, f.root}, nil
	}}
}

func (f *benchFleet) hosts(n int) []target.Host {
	out := make([]target.Host, n)
	for i := range out {
		out[i] = target.Host{Host: spec.Host{Name: f.fl.Hosts[i]}}
	}
	return out
}

// rooted runs every command with GPUFORM_ROOT set to a simulated root.
type rooted struct {
	transport.Transport
	root string
}

func (r rooted) Run(ctx context.Context, cmd transport.Command) (transport.Result, error) {
	env := maps.Clone(cmd.Env)
	if env == nil {
		env = map[string]string{}
	}
	env["GPUFORM_ROOT"] = r.root
	cmd.Env = env
	return r.Transport.Run(ctx, cmd)
}

// BenchmarkFactsSSH is gpuform facts's work on 1, 10 and 50 hosts over
// real sshd (target.Probe through a connect.Opener, parallelism 32). Beside
// ns/host it reports the controller's own CPU per host (getrusage of this
// process: sshd and the probe shells are not counted), its bytes and
// allocations per host, and its peak RSS and live heap during the loop.
// Compare ns/host with BenchmarkTrueSSH and BenchmarkOpenSSHTrue.
func BenchmarkFactsSSH(b *testing.B) {
	f := startBenchFleet(b)
	for _, n := range []int{1, 10, 50} {
		b.Run(fmt.Sprintf("hosts=%d", n), func(b *testing.B) {
			hosts, o := f.hosts(n), f.options()
			probe := func() {
				probed, err := target.Probe(context.Background(), hosts, o)
				if err != nil {
					b.Fatal(err)
				}
				for _, p := range probed {
					if p.Err != nil {
						b.Fatalf("%s: %v", p.Host.Host.Name, p.Err)
					}
					if len(p.Facts.NVIDIAGPUs()) != 8 {
						b.Fatalf("%s: probe saw %d GPUs", p.Host.Host.Name, len(p.Facts.NVIDIAGPUs()))
					}
				}
			}
			probe() // warm the servers
			b.ResetTimer()
			m := procmeter.Start()
			for b.Loop() {
				probe()
			}
			m.Stop().ReportPerHost(b, n)
		})
	}
}

// BenchmarkTrueSSH runs `true` on 50 hosts the way BenchmarkFactsSSH
// probes them (connect.Opener, parallelism 32): the connection's own cost.
func BenchmarkTrueSSH(b *testing.B) {
	f := startBenchFleet(b)
	hosts, o := f.hosts(50), f.options()
	run := func() {
		errs := target.Each(context.Background(), hosts, o, func(ctx context.Context, h target.Host) error {
			t, err := o.Connect(ctx, h.Host)
			if err != nil {
				return err
			}
			defer t.Close()
			res, err := t.Run(ctx, transport.Command{Script: "true"})
			if err == nil && res.ExitCode != 0 {
				err = fmt.Errorf("true exited %d", res.ExitCode)
			}
			return err
		})
		for h, err := range errs {
			if err != nil {
				b.Fatalf("%s: %v", h, err)
			}
		}
	}
	run()
	b.ResetTimer()
	m := procmeter.Start()
	for b.Loop() {
		run()
	}
	m.Stop().ReportPerHost(b, len(hosts))
}

// BenchmarkOpenSSHTrue is the fan-out gpuform's facts is measured
// against: OpenSSH's client, `ssh -F CONFIG HOST true`, on the same 50
// hosts, 32 at a time. child-cpu-ms/host is the ssh clients' CPU.
func BenchmarkOpenSSHTrue(b *testing.B) {
	sshPath, err := exec.LookPath("ssh")
	if err != nil {
		b.Skip("no OpenSSH client (ssh) on PATH")
	}
	f := startBenchFleet(b)
	names := f.fl.Hosts[:50]
	run := func() {
		for h, err := range fleet.Run(context.Background(), names, fleet.DefaultParallelism, func(ctx context.Context, host string) error {
			out, err := exec.CommandContext(ctx, sshPath, "-F", f.fl.ConfigFile, "-o", "UserKnownHostsFile="+f.fl.KnownHostsFile,
				"-o", "BatchMode=yes", host, "true").CombinedOutput()
			if err != nil {
				return fmt.Errorf("%w: %s", err, out)
			}
			return nil
		}, nil) {
			if err != nil {
				b.Fatalf("%s: %v", h, err)
			}
		}
	}
	run()
	b.ResetTimer()
	m := procmeter.Start()
	for b.Loop() {
		run()
	}
	m.Stop().ReportPerHost(b, len(names))
}
