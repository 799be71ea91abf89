package main

import (
	"context"
	"fmt"
	"os"

	"github.com/gpuform/gpuform/provision/connect"
	"github.com/gpuform/gpuform/provision/fleet"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/transport"
	"github.com/gpuform/gpuform/spec"
)

// selectHosts is target.Select for a command: its diagnostics are
// reported through the command's view, like the spec's own, and a spec
// without hosts is an error.
func selectHosts(cfg *spec.Config, dir string, targets []string, v operationView) ([]target.Host, error) {
	hosts, diags := target.Select(cfg, targets)
	if err := v.Diagnostics(diags, cfg); err != nil {
		return nil, err
	}
	if len(hosts) == 0 {
		return nil, fmt.Errorf("the spec in %s has no hosts", dir)
	}
	return hosts, nil
}

// connectFlags are the connection flags of every command that reaches hosts.
type connectFlags struct {
	acceptNew      bool
	knownHosts     []string
	identities     []string
	sshConfig      string
	parallelism    int
	connectTimeout string
	allowLocal     bool
	// timeouts are registered only by the commands that honour them.
	timeouts timeoutFlags
}

// refuseLocal stops a command before it reaches any host when one of them
// is this machine (local://) and -allow-local was not given: a spec from an
// untrusted pull request, planned or verified in CI, must not run commands
// on the CI runner by listing local://. what says what would happen.
func (f *connectFlags) refuseLocal(hosts []target.Host, what string) error {
	if f.allowLocal {
		return nil
	}
	for _, h := range hosts {
		if connect.IsLocal(h.Host.Name) {
			return connect.LocalRefusal(h.Host.Name, what)
		}
	}
	return nil
}

// targetOptions are the target options of every command that reaches
// hosts: how to connect (see options), how many hosts at once, the probe
// limit, and progress on standard error under the label what (shown when
// show; the hosts in flight are tracked for a second Ctrl-C either way).
func (f *connectFlags) targetOptions(s Streams, specDir string, show bool, what string) (target.Options, error) {
	opts, err := f.options(s, specDir)
	if err != nil {
		return target.Options{}, err
	}
	return f.targetOptionsFor(s, opts, show, what), nil
}

// targetOptionsFor is targetOptions with connection options already made.
func (f *connectFlags) targetOptionsFor(s Streams, opts connect.Options, show bool, what string) target.Options {
	var p fleet.Progress = fleet.Nop{}
	if show {
		p = fleet.NewProgress(s.Err, what)
	}
	// One opener for the command's hosts: ssh_config and the key files
	// are read once, not once per host.
	op := connect.NewOpener(opts)
	return target.Options{
		Connect: func(ctx context.Context, h spec.Host) (transport.Transport, error) {
			return op.Open(ctx, h)
		},
		Parallelism:  f.parallelism,
		Progress:     s.interrupts.trackFleet(p, what),
		ProbeTimeout: f.timeouts.probeFlag(),
	}
}

// options are the connection options of the flags, checked.
func (f *connectFlags) options(s Streams, specDir string) (connect.Options, error) {
	o := connect.Options{
		SimStateDir:       connect.SimStateDir(specDir, s.Getenv),
		SpecDir:           specDir,
		AllowLocal:        f.allowLocal,
		AcceptNewHostKeys: f.acceptNew,
		KnownHostsFiles:   f.knownHosts,
		IdentityFiles:     f.identities,
		SSHConfigPath:     f.sshConfig,
		Getenv:            s.Getenv,
	}
	if err := f.timeouts.check(); err != nil {
		return o, err
	}
	if f.parallelism < 1 {
		// fleet.Run would quietly read 0 or less as the default of 32:
		// the opposite of what someone lowering it meant.
		return o, fmt.Errorf("-parallelism must be 1 or more, not %d", f.parallelism)
	}
	// Files named on the command line must exist, as with ssh -F and -i:
	// a typo would otherwise fall back to other keys or no ssh_config and
	// show up as one login failure per host.
	if f.sshConfig != "" && f.sshConfig != "none" {
		if _, err := os.Stat(f.sshConfig); err != nil {
			return o, fmt.Errorf("-ssh-config: %w", err)
		}
	}
	for _, id := range f.identities {
		if _, err := os.Stat(id); err != nil {
			return o, fmt.Errorf("-identity: %w", err)
		}
	}
	if f.connectTimeout != "" {
		d, err := parseSeconds(f.connectTimeout)
		if err != nil {
			return o, fmt.Errorf("-connect-timeout: %w", err)
		}
		o.ConnectTimeout = d
	}
	return o, nil
}
