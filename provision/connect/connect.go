// Package connect turns a host of a spec into a transport: a simulated node
// for sim:// hosts, this machine for local:// (only with Options.AllowLocal),
// and SSH for everything else.
// It is the one place that choice is made, so plan, apply, facts and verify
// reach hosts the same way. It does not probe or change anything itself.
package connect

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gpuform/gpuform/internal/lazyre"
	"github.com/gpuform/gpuform/provision/local"
	"github.com/gpuform/gpuform/provision/sim"
	"github.com/gpuform/gpuform/provision/ssh"
	"github.com/gpuform/gpuform/provision/transport"
	"github.com/gpuform/gpuform/spec"
)

// LocalScheme names this machine as a host: "local://" or "local://NAME".
const LocalScheme = "local://"

// Options are the connection settings that come from the command line and
// the environment rather than from the spec.
type Options struct {
	// SimStateDir holds materialised simulated roots (see SimStateDir).
	SimStateDir string
	// SpecDir is the spec directory of the command, "" when there is none;
	// a SimStateDir inside it is refused, since a spec directory may come
	// from someone else (a pull request) and simulated roots hold programs
	// gpuform runs.
	SpecDir string
	// AllowLocal lets local:// hosts run commands on this machine (the
	// -allow-local flag); without it Open refuses them.
	AllowLocal bool
	// MockNVML, for local:// hosts, names a go-nvml mock system that
	// answers NVML for this machine (verify --local -mock-nvml, to try it
	// without a GPU); the transport then offers transport.NVMLMocker.
	MockNVML string
	// MockFaults, with MockNVML, are faults planted in the mock
	// (KIND:GPU or xid:GPU:XID).
	MockFaults []string
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

// SimStateDir returns where the simulated nodes of the spec in specDir
// keep their state: $GPUFORM_SIM_STATE when set (used as it is, shared by
// every spec), else a directory of their own under the per-user state
// directory, $XDG_STATE_HOME/gpuform/sim or ~/.local/state/gpuform/sim,
// named after the spec directory and a hash of its absolute path, so two
// specs never share a node. It returns "" when neither HOME nor an
// absolute XDG_STATE_HOME is set. Nothing is created or checked here;
// sim.Materialize does that.
func SimStateDir(specDir string, getenv func(string) string) string {
	if getenv == nil {
		return ""
	}
	if d := getenv("GPUFORM_SIM_STATE"); d != "" {
		return d
	}
	base := ""
	if x := getenv("XDG_STATE_HOME"); filepath.IsAbs(x) {
		// The XDG spec says to ignore a relative value.
		base = filepath.Join(x, "gpuform", "sim")
	} else if h := getenv("HOME"); filepath.IsAbs(h) {
		base = filepath.Join(h, ".local", "state", "gpuform", "sim")
	} else {
		return ""
	}
	abs, err := filepath.Abs(specDir)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256([]byte(abs))
	name := strings.Trim(nonName.ReplaceAllString(filepath.Base(abs), "-"), "-")
	if name == "" {
		name = "spec"
	}
	return filepath.Join(base, name+"-"+hex.EncodeToString(sum[:6]))
}

var nonName = lazyre.New(`[^A-Za-z0-9._-]+`)

// LocalRefusal is the error for a local:// host used without -allow-local;
// what says what would happen ("apply would change the machine gpuform
// runs on").
func LocalRefusal(host, what string) error {
	return fmt.Errorf("host %s is this machine: %s; pass -allow-local if that is what you mean", host, what)
}

// inside reports whether path is dir or below it, after making both
// absolute and resolving the links that exist.
func inside(path, dir string) bool {
	// resolve follows the links of the deepest part of p that exists: a
	// state directory not made yet may still lie behind a link into dir.
	resolve := func(p string) string {
		abs, err := filepath.Abs(p)
		if err != nil {
			return p
		}
		rest := ""
		for cur := abs; ; {
			if r, err := filepath.EvalSymlinks(cur); err == nil {
				return filepath.Join(r, rest)
			}
			parent := filepath.Dir(cur)
			if parent == cur {
				return abs
			}
			rest = filepath.Join(filepath.Base(cur), rest)
			cur = parent
		}
	}
	rel, err := filepath.Rel(resolve(dir), resolve(path))
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// IsSim reports whether host names a simulated node.
func IsSim(host string) bool { return strings.HasPrefix(host, sim.Scheme) }

// IsLocal reports whether host names this machine.
func IsLocal(host string) bool { return strings.HasPrefix(host, LocalScheme) }

// RunsHere reports whether the commands of host run on this machine: a
// simulated node (its tools are stand-ins run here) or this machine itself.
func RunsHere(host string) bool { return IsSim(host) || IsLocal(host) }

// Open returns a transport to h. Errors are *transport.HostError, so fleet
// commands report them for that host and go on with the others. A
// command that reaches many hosts uses an Opener, which reads ssh_config
// and the key files once.
func Open(ctx context.Context, h spec.Host, o Options) (transport.Transport, error) {
	return NewOpener(o).Open(ctx, h)
}

// Opener opens transports with one set of Options for the hosts of one
// command. Its SSH dialers, one per distinct user, port, become and jump
// chain (usually one for a whole fleet), read ssh_config and parse each
// key file once, not once per host. It is safe for concurrent use.
type Opener struct {
	o       Options
	mu      sync.Mutex
	dialers map[dialerKey]*ssh.Dialer
}

// dialerKey is what of a host its ssh.Dialer's Options depend on.
type dialerKey struct {
	user, become, jump string
	port               int
}

// NewOpener returns an Opener for o.
func NewOpener(o Options) *Opener {
	return &Opener{o: o, dialers: map[dialerKey]*ssh.Dialer{}}
}

// dialer returns the SSH dialer for h's settings, made on first use.
func (op *Opener) dialer(h spec.Host) (*ssh.Dialer, error) {
	key := dialerKey{user: h.User, become: h.Become, jump: h.Jump, port: h.Port}
	op.mu.Lock()
	defer op.mu.Unlock()
	if d, ok := op.dialers[key]; ok {
		return d, nil
	}
	o := op.o
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
	d, err := ssh.NewDialer(so)
	if err != nil {
		// Not remembered: the error is reported for this host, and a
		// later host asks again (ssh.Dial did the same for every host).
		return nil, err
	}
	op.dialers[key] = d
	return d, nil
}

// Open returns a transport to h, as the package-level Open does.
func (op *Opener) Open(ctx context.Context, h spec.Host) (transport.Transport, error) {
	o := op.o
	switch {
	case IsSim(h.Name):
		if o.SimStateDir == "" {
			return nil, &transport.HostError{Host: h.Name, Op: "connect", Err: fmt.Errorf("no state directory for simulated nodes: set HOME, XDG_STATE_HOME or GPUFORM_SIM_STATE")}
		}
		if o.SpecDir != "" && inside(o.SimStateDir, o.SpecDir) {
			return nil, &transport.HostError{Host: h.Name, Op: "connect", Err: fmt.Errorf("refusing simulated node state %s: it is inside the spec directory %s, which may come from someone else; point GPUFORM_SIM_STATE elsewhere", o.SimStateDir, o.SpecDir)}
		}
		root, err := sim.MaterializeHost(h.Name, o.SimStateDir)
		if err != nil {
			return nil, &transport.HostError{Host: h.Name, Op: "connect", Err: err}
		}
		return sim.New(h.Name, root), nil
	case IsLocal(h.Name):
		if !o.AllowLocal {
			return nil, &transport.HostError{Host: h.Name, Op: "connect", Err: LocalRefusal(h.Name, "gpuform would run commands on the machine it runs on")}
		}
		if o.MockNVML != "" {
			return transport.WithNVMLMock(local.New(h.Name), transport.NVMLMock{System: o.MockNVML, Faults: o.MockFaults}), nil
		}
		return local.New(h.Name), nil
	}
	d, err := op.dialer(h)
	if err != nil {
		return nil, &transport.HostError{Host: h.Name, Op: "resolve", Err: err}
	}
	c, err := d.Dial(ctx, h.Name)
	if err != nil {
		return nil, err
	}
	return c, nil
}
