package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/gpuform/gpuform/provision/connect"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/graph"
	"github.com/gpuform/gpuform/provision/local"
	"github.com/gpuform/gpuform/provision/resource"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/transport"
	"github.com/gpuform/gpuform/spec"
)

// graphFlags are the flags of gpuform graph.
type graphFlags struct {
	targets []string
	root    string
	offline bool
	format  string
	out     string
}

func newGraphCommand(s Streams) *cobra.Command {
	var flags specFlags
	var conn connectFlags
	var gf graphFlags
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
Graphviz source; svg renders that with Graphviz's dot program, which must be
installed (apt-get install graphviz).

Exit status: 0 every host drawn; 1 a host could not be probed, the spec is
invalid, or the picture could not be written.`,
		Args: maxOneDir,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch gf.format {
			case "text", "dot", "svg":
			default:
				return fmt.Errorf("-format must be text, dot or svg, not %q", gf.format)
			}
			pics, failed, err := graphPictures(cmd.Context(), s, &flags, &conn, gf, args)
			if err != nil {
				return err
			}
			if err := writeGraph(cmd.Context(), s, gf, graph.Group(pics)); err != nil {
				return err
			}
			if failed {
				return exitError{ExitFailed}
			}
			return nil
		},
	}
	flags.register(cmd.Flags())
	conn.register(cmd.Flags())
	conn.timeouts.registerProbe(cmd.Flags())
	cmd.Flags().StringArrayVar(&gf.targets, "target", nil, "only these hosts (repeatable; ranges allowed: gpu[001-004])")
	cmd.Flags().StringVar(&gf.root, "root", "", "draw the root filesystem at PATH on this machine instead of the spec's hosts")
	cmd.Flags().BoolVar(&gf.offline, "offline", false, "draw the spec's hardware values, reaching no host")
	cmd.Flags().StringVar(&gf.format, "format", "text", "text, dot or svg")
	completeValues(cmd, "format", "text", "dot", "svg")
	cmd.Flags().StringVar(&gf.out, "out", "", "write the picture to FILE instead of standard output")
	return cmd
}

// graphPictures builds one picture per host (or per node block with
// -offline). failed reports hosts that could not be probed; they are
// named on standard error and the others are still drawn.
func graphPictures(ctx context.Context, s Streams, flags *specFlags, conn *connectFlags, gf graphFlags, args []string) ([]graph.Picture, bool, error) {
	if gf.root != "" {
		if len(args) > 0 || len(gf.targets) > 0 || gf.offline {
			return nil, false, fmt.Errorf("--root draws a root filesystem and takes no spec directory, -target or -offline")
		}
		if fi, err := os.Stat(gf.root); err != nil || !fi.IsDir() {
			return nil, false, fmt.Errorf("--root %s is not a directory", gf.root)
		}
		abs, err := filepath.Abs(gf.root)
		if err != nil {
			return nil, false, err
		}
		if err := conn.timeouts.check(); err != nil {
			return nil, false, err
		}
		o := conn.targetOptionsFor(s, connect.Options{}, false, "probing")
		pctx, cancel := transport.WithTimeout(ctx, o.ProbeLimit(spec.Host{}), "the probe", target.ProbeSetting)
		defer cancel()
		n, err := facts.Probe(pctx, local.New("root:"+abs), facts.Options{Reads: resource.Reads(), Root: abs})
		if err != nil {
			return nil, false, fmt.Errorf("probing %s: %w", gf.root, err)
		}
		return []graph.Picture{{Hosts: []string{gf.root}, Topology: graph.FromFacts(n, nil)}}, false, nil
	}
	dir := dirArg(args)
	cfg, diags := flags.load(s, dir)
	if err := reportLoad(s, diags, cfg, false); err != nil {
		return nil, false, err
	}
	hosts, err := selectHosts(s, cfg, dir, gf.targets, false)
	if err != nil {
		return nil, false, err
	}
	if gf.offline {
		return offlinePictures(hosts)
	}
	if err := conn.refuseLocal(hosts, "graph would run its probe on the machine gpuform runs on (--root PATH probes a directory here)"); err != nil {
		return nil, false, err
	}
	o, err := conn.targetOptions(s, dir, gf.out != "" || gf.format == "text", "probing")
	if err != nil {
		return nil, false, err
	}
	probed, _ := target.Probe(ctx, hosts, o)
	var pics []graph.Picture
	failed := false
	for _, p := range probed {
		if p.Err != nil {
			failed = true
			fmt.Fprintf(s.Err, "Error: %s: %s\n", p.Host.Host.Name, target.ErrorText(p.Err))
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

func writeGraph(ctx context.Context, s Streams, gf graphFlags, pics []graph.Picture) error {
	var b bytes.Buffer
	var err error
	switch gf.format {
	case "text":
		err = graph.WriteText(&b, pics)
	default:
		err = graph.WriteDOT(&b, pics)
	}
	if err != nil {
		return err
	}
	data := b.Bytes()
	if gf.format == "svg" {
		if data, err = graph.RenderSVG(ctx, data); err != nil {
			return err
		}
	}
	if gf.out != "" {
		return writeNewFile(gf.out, data)
	}
	_, err = s.Out.Write(data)
	return err
}
