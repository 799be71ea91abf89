package target

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/fleet"
	"github.com/gpuform/gpuform/provision/resource"
	"github.com/gpuform/gpuform/provision/transport"
	"github.com/gpuform/gpuform/spec"
)

// Host is one host a command acts on, with the node block it follows.
type Host struct {
	// Host is the host and how to reach it.
	Host spec.Host
	// Node is the node block whose desired state applies; nil for a host
	// given on the command line without a spec (import).
	Node *spec.Node
}

// Connector opens a transport to a host: provision/connect for the CLI,
// a loopback sshd in tests.
type Connector func(ctx context.Context, h spec.Host) (transport.Transport, error)

// DefaultProbeTimeout bounds one probe of a host when neither the command
// line nor the inventory says otherwise: the probe only reads files and
// runs a few short tools, so two minutes means something blocks (a wedged
// /proc/driver/nvidia, a hung NFS mount).
const DefaultProbeTimeout = 2 * time.Minute

// ProbeSetting names where the probe limit is set, for timeout messages.
const ProbeSetting = "-probe-timeout or the inventory's probe_timeout"

// Select lists the hosts of every node of cfg in spec order, restricted to
// those named in only (the -target values: comma lists and ranges like
// gpu[001-004]) when any are given. A -target that matches no host is an
// error, so a typo never silently does nothing. (A host listed by two node
// blocks never gets here: spec loading refuses it, so validate does too.)
func Select(cfg *spec.Config, only []string) ([]Host, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	var all []Host
	first := map[string]Host{}
	for _, n := range cfg.Nodes {
		for _, h := range n.Hosts {
			if _, dup := first[h.Name]; dup {
				continue
			}
			first[h.Name] = Host{Host: h, Node: n}
			all = append(all, Host{Host: h, Node: n})
		}
	}
	if diags.HasErrors() || len(only) == 0 {
		return all, diags
	}
	want := map[string]bool{}
	for _, t := range only {
		// A hostlist's commas (outside brackets) separate names, as in
		// SLURM_JOB_NODELIST; spaces around them are forgiven here.
		{
			expanded, err := spec.ExpandHostPattern(strings.Join(strings.Fields(t), ""))
			if err != nil {
				return nil, append(diags, flagError(fmt.Sprintf("-target %s: %v", t, err)))
			}
			for _, h := range expanded {
				if _, ok := first[h]; !ok {
					return nil, append(diags, flagError(fmt.Sprintf("-target %s: no node in the spec has host %q (hosts: %s)", t, h, someNames(first))))
				}
				want[h] = true
			}
		}
	}
	var out []Host
	for _, h := range all {
		if want[h.Host.Name] {
			out = append(out, h)
		}
	}
	return out, diags
}

func flagError(msg string) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: msg}
}

// someNames lists up to five host names, for a "did you mean" hint.
func someNames(known map[string]Host) string {
	names := make([]string, 0, len(known))
	for k := range known {
		names = append(names, k)
	}
	sort.Strings(names)
	if len(names) > 5 {
		names = append(names[:5], "…")
	}
	return strings.Join(names, ", ")
}

// Options say how to run work on hosts; the zero value runs fleet's
// default number of hosts at once and shows no progress.
type Options struct {
	// Connect opens a transport to a host.
	Connect Connector
	// Parallelism bounds how many hosts run at once; 0 or less means
	// fleet.DefaultParallelism.
	Parallelism int
	// Progress is told as each host starts and ends; nil shows nothing.
	Progress fleet.Progress
	// ProbeTimeout bounds each probe (the -probe-timeout flag); zero means
	// the host's inventory probe_timeout, else DefaultProbeTimeout.
	ProbeTimeout time.Duration
	// Packages, when set, names the packages a node block installs: the
	// probe also asks each host's package manager which versions of them
	// its repositories offer (facts.Node.Offers), in the same command.
	Packages func(n *spec.Node) []string
}

// ProbeLimit is the time allowed to connect to and probe h.
func (o Options) ProbeLimit(h spec.Host) time.Duration {
	switch {
	case o.ProbeTimeout > 0:
		return o.ProbeTimeout
	case h.ProbeTimeout > 0:
		return h.ProbeTimeout
	}
	return DefaultProbeTimeout
}

// Each calls fn for every host, at most o.Parallelism at once, and returns
// each host's result by name (fleet.Run's: nil, fn's error, or a
// *fleet.NotStartedError). A host listed twice runs once.
func Each(ctx context.Context, hosts []Host, o Options, fn func(ctx context.Context, h Host) error) map[string]error {
	byName := make(map[string]Host, len(hosts))
	names := make([]string, 0, len(hosts))
	for _, h := range hosts {
		if _, dup := byName[h.Host.Name]; !dup {
			names = append(names, h.Host.Name)
			byName[h.Host.Name] = h
		}
	}
	return fleet.Run(ctx, names, o.Parallelism, func(ctx context.Context, name string) error {
		return fn(ctx, byName[name])
	}, o.Progress)
}

// Probed is the outcome of probing one host.
type Probed struct {
	// Host is the host probed.
	Host Host
	// Facts are the host's facts, nil on error.
	Facts *facts.Node
	// Err is why the host could not be probed.
	Err error
}

// Probe connects to every host and probes it once, in parallel, and
// returns the outcomes in the order of hosts (a host listed twice once).
// Each host's failure is its own; Probe fails only when ctx ended first.
func Probe(ctx context.Context, hosts []Host, o Options) ([]Probed, error) {
	var out []Probed
	err := ProbeEach(ctx, hosts, o, func(n int) { out = make([]Probed, n) }, func(i int, p Probed) { out[i] = p })
	return out, err
}

// ProbeEach is Probe handing each host's outcome to fn as soon as the
// host is done, from the goroutine that probed it (fn must be safe for
// concurrent use), and keeping nothing: a command that needs only what
// it makes of a host's facts (plan) holds them no longer than fn does,
// not every host's until the last is probed. start is called first with
// the number of hosts (a host listed twice counts once); i is the host's
// place among them, in the order of hosts. Hosts that failed or never
// started are handed over once every host is done.
func ProbeEach(ctx context.Context, hosts []Host, o Options, start func(n int), fn func(i int, p Probed)) error {
	index := map[string]int{}
	var order []Host
	for _, h := range hosts {
		if _, dup := index[h.Host.Name]; !dup {
			index[h.Host.Name] = len(order)
			order = append(order, h)
		}
	}
	start(len(order))
	// Every host is probed for the same reads: the probe script (about
	// 33 kB) is built once and shared, not once a host. Reads that do not
	// pass the probe's check fail each host as its own probe would.
	reads := resource.Reads()
	script, _ := facts.NewProbeScript(reads)
	done := make([]bool, len(order))
	// Up to o.Parallelism hosts are connected and probed at once, but
	// only GOMAXPROCS of them are parsed and handed to fn at once: the
	// outputs of a fleet's hosts tend to arrive together, and parsing
	// them all at once held every host's parse (and fn's rendering) in
	// the heap together, on no more CPUs than this.
	parsing := make(chan struct{}, runtime.GOMAXPROCS(0))
	errs := Each(ctx, order, o, func(ctx context.Context, h Host) error {
		ctx, cancel := transport.WithTimeout(ctx, o.ProbeLimit(h.Host), "the probe", ProbeSetting)
		defer cancel()
		conn, err := o.Connect(ctx, h.Host)
		if err != nil {
			return err
		}
		defer conn.Close()
		t := &probeOnce{Transport: conn, parsing: parsing}
		defer t.release()
		opts := facts.Options{Become: h.Host.Become != "", ImageDirs: imageDirs(h.Node), Reads: reads, Script: script}
		// A host whose NVLink domain is read from the node: its fabric.
		opts.Fabric = h.Node != nil && h.Node.FabricDomainBlock(h.Host.Name) != nil
		if o.Packages != nil && h.Node != nil {
			opts.Packages = o.Packages(h.Node)
		}
		n, err := facts.Probe(ctx, t, opts)
		if err != nil {
			return err
		}
		// Each host's slot is its own: no lock is needed for done[i].
		i := index[h.Host.Name]
		done[i] = true
		fn(i, Probed{Host: h, Facts: n})
		return nil
	})
	for i, h := range order {
		if !done[i] {
			fn(i, Probed{Host: h, Err: errs[h.Host.Name]})
		}
	}
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted while probing hosts")
	}
	return nil
}

// probeOnce is a host's transport for its probe, which is one command
// (facts.Probe): once the command's output is in, it closes the
// connection, whose buffers (x/crypto's packet buffers grow to the
// largest packet) are not needed to parse the output, and waits for one
// of the parsing slots, held until release, so that the hosts whose
// output is in wait for a slot holding their output alone.
type probeOnce struct {
	transport.Transport
	parsing chan struct{}
	held    bool
}

func (p *probeOnce) Run(ctx context.Context, cmd transport.Command) (transport.Result, error) {
	res, err := p.Transport.Run(ctx, cmd)
	_ = p.Transport.Close()
	if !p.held {
		select {
		case p.parsing <- struct{}{}:
			p.held = true
		case <-ctx.Done():
			// Parsed without a slot: the probe is over either way.
		}
	}
	return res, err
}

// release frees the parsing slot, if the probe took one.
func (p *probeOnce) release() {
	if p.held {
		p.held = false
		<-p.parsing
	}
}

// ProbeOver runs the facts probe of h over an open transport, with h's
// become: every command probes a hardened host (/etc/docker mode 0700,
// a root-only dpkg database) the same way, so facts, verify and lock see
// what plan and apply see.
func ProbeOver(ctx context.Context, t transport.Transport, h spec.Host) (*facts.Node, error) {
	return facts.Probe(ctx, t, facts.Options{Become: h.Become != "", Reads: resource.Reads()})
}

// VerifyProbeOver is ProbeOver for verify of a host of node n: it also
// reads what only verify judges, IMEX's own view of its domain
// (nvidia-imex-ctl -N) where n runs IMEX. A hostRoot other than "" is
// the node's root filesystem mounted on the machine t runs on (verify
// --local -host-root): the probe reads the node's files there
// (facts.Options.HostRoot).
func VerifyProbeOver(ctx context.Context, t transport.Transport, h spec.Host, n *spec.Node, hostRoot string) (*facts.Node, error) {
	opts := facts.Options{Become: h.Become != "", Reads: resource.Reads(), Root: hostRoot, HostRoot: hostRoot != ""}
	opts.IMEXStatus = n != nil && n.Driver != nil && n.Driver.IMEX.V
	return facts.Probe(ctx, t, opts)
}

// imageDirs are the image_dir directories n will pull into (enroot,
// Apptainer), for the probe to report who may write to them, so that plan
// refuses an untrusted one before apply pulls anything.
func imageDirs(n *spec.Node) []string {
	if n == nil || n.Container == nil || !n.Container.ImageDir.Set {
		return nil
	}
	switch n.Container.Runtime.V {
	case facts.RuntimeEnroot, facts.RuntimeApptainer:
		return []string{n.Container.ImageDir.V}
	}
	return nil
}

// ErrorText is how a host's error reads beside the host's name: a
// HostError without the host it starts with, and anything the host wrote
// made safe to print.
func ErrorText(err error) string {
	var he *transport.HostError
	if errors.As(err, &he) {
		return he.Detail()
	}
	return transport.HostText(err.Error())
}
