package main

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/gpuform/gpuform/provision/connect"
	"github.com/gpuform/gpuform/spec"
)

// targetHost is a host with the node block it belongs to.
type targetHost struct {
	Host spec.Host
	Node *spec.Node
}

// selectHosts lists the hosts of every node, in spec order, restricted to
// targets when any are given. A target that matches no host is an error, so
// a typo never silently does nothing. A host in two nodes is listed once
// per node; commands that act per host reject that (lint reports it).
func selectHosts(cfg *spec.Config, targets []string) ([]targetHost, error) {
	var all []targetHost
	known := map[string]bool{}
	for _, n := range cfg.Nodes {
		for _, h := range n.Hosts {
			all = append(all, targetHost{Host: h, Node: n})
			known[h.Name] = true
		}
	}
	if len(targets) == 0 {
		return all, nil
	}
	want := map[string]bool{}
	for _, t := range targets {
		for _, p := range strings.Split(t, ",") {
			expanded, err := spec.ExpandHostPattern(strings.TrimSpace(p))
			if err != nil {
				return nil, fmt.Errorf("-target %s: %w", t, err)
			}
			for _, h := range expanded {
				if !known[h] {
					names := make([]string, 0, len(known))
					for k := range known {
						names = append(names, k)
					}
					sort.Strings(names)
					if len(names) > 5 {
						names = append(names[:5], "…")
					}
					return nil, fmt.Errorf("-target %s: no node in the spec has host %q (hosts: %s)", t, h, strings.Join(names, ", "))
				}
				want[h] = true
			}
		}
	}
	var out []targetHost
	for _, th := range all {
		if want[th.Host.Name] {
			out = append(out, th)
		}
	}
	return out, nil
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
func (f *connectFlags) refuseLocal(hosts []targetHost, what string) error {
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
		d, err := parseDuration(f.connectTimeout)
		if err != nil {
			return o, fmt.Errorf("--connect-timeout: %w", err)
		}
		o.ConnectTimeout = d
	}
	return o, nil
}
