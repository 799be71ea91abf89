//go:build cgo

package nvmlfacts

import (
	"context"
	"fmt"
	"io"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// RunAgent collects a Report and writes it as JSON to w. This is the whole
// body of the hidden `gpuform agent nvml --json` command: the controller
// reads w's bytes with Decode. A failed NVML start returns an *InitError
// after nothing was written, so the command can print it on stderr and exit
// non-zero; the controller turns that into a failed check.
func RunAgent(ctx context.Context, w io.Writer, opts AgentOptions) error {
	rep, err := CollectAgent(ctx, opts)
	if err != nil {
		return err
	}
	if err := rep.Encode(w); err != nil {
		return fmt.Errorf("writing NVML report: %w", err)
	}
	return nil
}

// CollectAgent is RunAgent without the JSON: the in-process path for
// `gpuform verify --local` (real NVML on the node itself) and for sim nodes
// (opts.Mock), where nothing needs to be copied or decoded.
func CollectAgent(ctx context.Context, opts AgentOptions) (*Report, error) {
	var lib nvml.Interface
	copts := opts.Collect
	if opts.Mock != "" {
		m, err := NewMock(opts.Mock, opts.Faults...)
		if err != nil {
			return nil, err
		}
		if opts.DriverVersion != "" {
			v := opts.DriverVersion
			m.SystemGetDriverVersionFunc = func() (string, nvml.Return) { return v, nvml.SUCCESS }
		}
		lib = m
		if copts.Topology == nil {
			copts.Topology = m
		}
		if len(copts.NICs) == 0 {
			copts.NICs = m.NICs()
		}
		if copts.Processes && opts.SimRoot != "" {
			// A simulated node has no driver to ask: its processes are
			// a replay, and their /proc is under its root.
			ps, err := ReadSimProcesses(opts.SimRoot)
			if err != nil {
				return nil, err
			}
			m.SetProcesses(ps)
			copts.ProcRoot = opts.SimRoot
		}
	} else {
		lib = nvml.New()
		if copts.Topology == nil {
			copts.Topology = SysfsTopology{Root: opts.SysRoot}
		}
		if len(copts.NICs) == 0 {
			nics, err := DiscoverNICs(opts.SysRoot)
			if err != nil {
				return nil, err
			}
			copts.NICs = nics
		}
	}
	rep, err := Collect(ctx, lib, copts)
	if err != nil {
		return nil, err
	}
	if opts.Mock != "" {
		rep.Source = SourceMock
		rep.Mock = opts.Mock
		if rep.Processes != nil {
			rep.Processes.Modelled = true
		}
	}
	return rep, nil
}
