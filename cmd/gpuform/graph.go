package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpuform/gpuform/provision/connect"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/graph"
	"github.com/gpuform/gpuform/provision/local"
	"github.com/gpuform/gpuform/provision/resource"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/transport"
	"github.com/gpuform/gpuform/spec"
)

// graphArguments are the arguments of gpuform graph.
type graphArguments struct {
	// Dir is the spec directory, "." when omitted.
	Dir string
	// Spec are -var and -var-file.
	Spec specFlags
	// Conn are the connection flags and -probe-timeout.
	Conn connectFlags
	// Targets are the -target hosts; none means every host.
	Targets []string
	// Root is --root: an unpacked root filesystem drawn instead of the
	// spec's hosts, "" for none.
	Root string
	// Offline is -offline: draw the node blocks' hardware values, reaching
	// no host.
	Offline bool
	// Format is -format: text, dot, svg or png.
	Format string
	// OutPath is -out: where the picture is written, "" for standard
	// output.
	OutPath string
}

func (a *graphArguments) register(fs *pflag.FlagSet) {
	a.Spec.register(fs)
	a.Conn.register(fs)
	a.Conn.timeouts.registerProbe(fs)
	fs.StringArrayVar(&a.Targets, "target", nil, "only these hosts (repeatable; ranges allowed: gpu[001-004])")
	fs.StringVar(&a.Root, "root", "", "draw the root filesystem at PATH on this machine instead of the spec's hosts")
	fs.BoolVar(&a.Offline, "offline", false, "draw the spec's hardware values, reaching no host")
	fs.StringVar(&a.Format, "format", "text", "text, dot, svg or png")
	fs.StringVar(&a.OutPath, "out", "", "write the picture to FILE instead of standard output")
}

// finish checks -format, then refuses a spec directory, -target or
// -offline beside --root, in the order graph has always reported them.
func (a *graphArguments) finish(_ *pflag.FlagSet, args []string) error {
	switch a.Format {
	case "text", "dot", "svg", "png":
	default:
		return fmt.Errorf("-format must be text, dot, svg or png, not %q", a.Format)
	}
	if a.Root != "" && (len(args) > 0 || len(a.Targets) > 0 || a.Offline) {
		return fmt.Errorf("--root draws a root filesystem and takes no spec directory, -target or -offline")
	}
	a.Dir = dirArg(args)
	return nil
}

// parseGraphArguments parses gpuform graph's command line (after "graph").
func parseGraphArguments(args []string) (*graphArguments, error) {
	a := &graphArguments{}
	return a, parseArguments(args, a.register, maxOneDir, a.finish)
}

func newGraphCommand(s Streams) *cobra.Command {
	a := &graphArguments{}
	cmd := &cobra.Command{
		Use:         "graph [DIR]",
		Annotations: graceful(),
		Short:       "Draw the topology and data path of the hosts of a spec",
		Long: `Graph draws each host of the spec in DIR as the facts probe reads it: CPU
sockets and NUMA nodes, PCIe root ports and switches, GPUs (index, model, bus
id, link generation and width), NVLink and NVSwitch, and NICs (name, rate),
along the data path memory → PCIe → GPU → NVLink → NIC. Problems are marked
on the picture: a PCIe link below its maximum, a GPU whose NIC is across
sockets (SYS), a numa bind that disagrees with where a GPU is, a device the
hardware value declares that the host lacks. Hosts that draw the same share
one picture.

With -offline it draws each node block's hardware value instead and reaches
no host. With --root PATH it probes an unpacked root filesystem on this
machine and needs no spec.

-format text is a nvidia-smi topo -m style matrix and a tree; dot is
Graphviz source; svg and png are gpuform's own picture, laid out as lstopo
draws a machine (socket, NUMA node, PCIe root port and switches, devices;
NVLink as one band), each host group's picture sized to fit a 1600x1000
screen.

Exit status: 0 every host drawn; 1 a host could not be probed, the spec is
invalid, or the picture could not be written.`,
		Args: maxOneDir,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := a.finish(cmd.Flags(), args); err != nil {
				return err
			}
			v := newGraphView(a, s)
			g, err := runGraph(cmd.Context(), s, a, v)
			if err != nil {
				return err
			}
			if err := v.Graph(cmd.Context(), g.Pictures); err != nil {
				return err
			}
			if g.Failed {
				return exitError{ExitFailed}
			}
			return nil
		},
	}
	a.register(cmd.Flags())
	completeValues(cmd, "format", "text", "dot", "svg", "png")
	return cmd
}

// graphModel is what gpuform graph draws: the pictures, hosts that draw
// the same grouped into one, and whether a host could not be probed (it
// was reported through the view; the others are still drawn).
type graphModel struct {
	Pictures []graph.Picture
	Failed   bool
}

// runGraph is gpuform graph's work: it builds one picture per host (or
// per node block with -offline, or of the --root directory) and groups
// the hosts that draw the same.
func runGraph(ctx context.Context, s Streams, a *graphArguments, v graphView) (*graphModel, error) {
	pics, failed, err := graphPictures(ctx, s, a, v)
	if err != nil {
		return nil, err
	}
	return &graphModel{Pictures: graph.Group(pics), Failed: failed}, nil
}

// graphPictures builds one picture per host (or per node block with
// -offline). failed reports hosts that could not be probed; they are
// reported through the view and the others are still drawn.
func graphPictures(ctx context.Context, s Streams, a *graphArguments, v graphView) ([]graph.Picture, bool, error) {
	if a.Root != "" {
		if fi, err := os.Stat(a.Root); err != nil || !fi.IsDir() {
			return nil, false, fmt.Errorf("--root %s is not a directory", a.Root)
		}
		abs, err := filepath.Abs(a.Root)
		if err != nil {
			return nil, false, err
		}
		if err := a.Conn.timeouts.check(); err != nil {
			return nil, false, err
		}
		o := a.Conn.targetOptionsFor(s, connect.Options{}, false, "probing")
		pctx, cancel := transport.WithTimeout(ctx, o.ProbeLimit(spec.Host{}), "the probe", target.ProbeSetting)
		defer cancel()
		n, err := facts.Probe(pctx, local.New("root:"+abs), facts.Options{Reads: resource.Reads(), Root: abs})
		if err != nil {
			return nil, false, fmt.Errorf("probing %s: %w", a.Root, err)
		}
		return []graph.Picture{{Hosts: []string{a.Root}, Topology: graph.FromFacts(n, nil)}}, false, nil
	}
	cfg, diags := a.Spec.load(s, a.Dir)
	if err := v.Diagnostics(diags, cfg); err != nil {
		return nil, false, err
	}
	hosts, err := selectHosts(cfg, a.Dir, a.Targets, v)
	if err != nil {
		return nil, false, err
	}
	if a.Offline {
		return offlinePictures(hosts)
	}
	if err := a.Conn.refuseLocal(hosts, "graph would run its probe on the machine gpuform runs on (--root PATH probes a directory here)"); err != nil {
		return nil, false, err
	}
	o, err := a.Conn.targetOptions(s, a.Dir, v.ShowsProbeProgress(), "probing")
	if err != nil {
		return nil, false, err
	}
	probed, _ := target.Probe(ctx, hosts, o)
	var pics []graph.Picture
	failed := false
	for _, p := range probed {
		if p.Err != nil {
			failed = true
			v.HostFailed(p.Host.Host.Name, p.Err)
			continue
		}
		pic := graph.Picture{Hosts: []string{p.Host.Host.Name}, Topology: graph.FromFacts(p.Facts, p.Host.Node)}
		if p.Host.Node != nil {
			pic.Nodes = []string{p.Host.Node.Name}
		}
		pics = append(pics, pic)
	}
	return pics, failed, nil
}

// offlinePictures draws each selected node block's hardware once, for the
// hosts selected in it.
func offlinePictures(hosts []target.Host) ([]graph.Picture, bool, error) {
	var pics []graph.Picture
	index := map[*spec.Node]int{}
	for _, h := range hosts {
		if h.Node == nil {
			continue
		}
		if i, ok := index[h.Node]; ok {
			pics[i].Hosts = append(pics[i].Hosts, h.Host.Name)
			continue
		}
		t, err := graph.FromSpec(h.Node)
		if err != nil {
			return nil, false, err
		}
		index[h.Node] = len(pics)
		pics = append(pics, graph.Picture{Nodes: []string{h.Node.Name}, Hosts: []string{h.Host.Name}, Topology: t})
	}
	return pics, false, nil
}

// graphView renders gpuform graph's pictures in its -format, to
// standard output or the -out file; what the work reports on the way
// (the spec's diagnostics, hosts that could not be probed) is text on
// standard error in every format.
type graphView interface {
	operationView
	// HostFailed reports a host that could not be probed.
	HostFailed(host string, err error)
	// Graph writes the pictures.
	Graph(ctx context.Context, pics []graph.Picture) error
}

func newGraphView(a *graphArguments, s Streams) graphView {
	out := graphOut{s: s, path: a.OutPath}
	switch a.Format {
	case "text":
		return graphText{humanOperation{s}, out}
	case "svg", "png":
		return graphPicture{humanOperation{s}, out, a.Format == "png"}
	default:
		return graphDOT{humanOperation{s}, out}
	}
}

// graphOut is where a picture goes: the -out file, or standard output.
type graphOut struct {
	s    Streams
	path string
}

func (o graphOut) write(data []byte) error {
	if o.path != "" {
		return writeNewFile(o.path, data)
	}
	_, err := o.s.Out.Write(data)
	return err
}

func (o graphOut) HostFailed(host string, err error) {
	fmt.Fprintf(o.s.Err, "Error: %s: %s\n", host, target.ErrorText(err))
}

// graphText is the nvidia-smi topo -m style matrix and tree.
type graphText struct {
	humanOperation
	graphOut
}

func (v graphText) Graph(_ context.Context, pics []graph.Picture) error {
	var b bytes.Buffer
	if err := graph.WriteText(&b, pics); err != nil {
		return err
	}
	return v.write(b.Bytes())
}

// graphDOT is Graphviz source. Its probe progress shows only when the
// picture goes to a file, as it always has.
type graphDOT struct {
	humanOperation
	graphOut
}

func (v graphDOT) ShowsProbeProgress() bool { return v.path != "" }

func (v graphDOT) Graph(_ context.Context, pics []graph.Picture) error {
	var b bytes.Buffer
	if err := graph.WriteDOT(&b, pics); err != nil {
		return err
	}
	return v.write(b.Bytes())
}

// graphPicture is the drawn picture, SVG or PNG. Like DOT, its probe
// progress shows only when the picture goes to a file.
type graphPicture struct {
	humanOperation
	graphOut
	png bool
}

func (v graphPicture) ShowsProbeProgress() bool { return v.path != "" }

func (v graphPicture) Graph(_ context.Context, pics []graph.Picture) error {
	var b bytes.Buffer
	write := graph.WriteSVG
	if v.png {
		write = graph.WritePNG
	}
	if err := write(&b, pics); err != nil {
		return err
	}
	return v.write(b.Bytes())
}
