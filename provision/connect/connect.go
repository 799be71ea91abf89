// Package connect turns a host of a spec into a transport: a simulated node
// for sim:// hosts, this machine for local://, and SSH for everything else.
// It is the one place that choice is made, so plan, apply, facts and verify
// reach hosts the same way. It does not probe or change anything itself.
package connect

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/gpuform/gpuform/provision/local"
	"github.com/gpuform/gpuform/provision/sim"
	"github.com/gpuform/gpuform/provision/ssh"
	"github.com/gpuform/gpuform/provision/transport"
	"github.com/gpuform/gpuform/spec"
)

// LocalScheme names this machine as a host: "local://" or "local://NAME".
const LocalScheme = "local://"

// StateDirName is where simulated nodes keep their state, under the spec
// directory, unless Options.SimStateDir says otherwise.
const StateDirName = ".gpuform/sim"

// Options are the connection settings that come from the command line and
// the environment rather than from the spec.
type Options struct {
	// SimStateDir holds materialised simulated roots.
	SimStateDir string
	// AcceptNewHostKeys records unknown SSH host keys (accept-new).
	AcceptNewHostKeys bool
	// KnownHostsFiles overrides ssh_config's known_hosts files.
	KnownHostsFiles []string
	// IdentityFiles are extra private keys to try.
	IdentityFiles []string
	// SSHConfigPath is the ssh_config to read ("" = ~/.ssh/config).
	SSHConfigPath string
	// ConnectTimeout bounds connecting to each host; zero is ssh's default.
	ConnectTimeout time.Duration
	// CommandTimeout bounds each remote command; zero means none.
	CommandTimeout time.Duration
	// Getenv reads SSH_AUTH_SOCK, HOME and USER; nil means os.Getenv.
	Getenv func(string) string
}

// SimStateDir returns the state directory for a spec directory: the
// GPUFORM_SIM_STATE environment variable when set, else DIR/.gpuform/sim.
func SimStateDir(specDir string, getenv func(string) string) string {
	if getenv != nil {
		if d := getenv("GPUFORM_SIM_STATE"); d != "" {
			return d
		}
	}
	return filepath.Join(specDir, StateDirName)
}

// IsSim reports whether host names a simulated node.
func IsSim(host string) bool { return strings.HasPrefix(host, sim.Scheme) }

// IsLocal reports whether host names this machine.
func IsLocal(host string) bool { return strings.HasPrefix(host, LocalScheme) }

// Open returns a transport to h. Errors are *transport.HostError, so fleet
// commands report them for that host and go on with the others.
func Open(ctx context.Context, h spec.Host, o Options) (transport.Transport, error) {
	switch {
	case IsSim(h.Name):
		if o.SimStateDir == "" {
			return nil, &transport.HostError{Host: h.Name, Op: "connect", Err: fmt.Errorf("no state directory for simulated nodes")}
		}
		root, err := sim.MaterializeHost(h.Name, o.SimStateDir)
		if err != nil {
			return nil, &transport.HostError{Host: h.Name, Op: "connect", Err: err}
		}
		return sim.New(h.Name, root), nil
	case IsLocal(h.Name):
		return local.New(h.Name), nil
	}
	so := ssh.Options{
		User:              h.User,
		Port:              h.Port,
		IdentityFiles:     o.IdentityFiles,
		KnownHostsFiles:   o.KnownHostsFiles,
		AcceptNewHostKeys: o.AcceptNewHostKeys,
		ConnectTimeout:    o.ConnectTimeout,
		CommandTimeout:    o.CommandTimeout,
		Become:            h.Become,
		SSHConfigPath:     o.SSHConfigPath,
		Getenv:            o.Getenv,
	}
	if h.Jump != "" {
		for _, hop := range strings.Split(h.Jump, ",") {
			so.ProxyJump = append(so.ProxyJump, strings.TrimSpace(hop))
		}
	}
	c, err := ssh.Dial(ctx, h.Name, so)
	if err != nil {
		return nil, err
	}
	return c, nil
}
