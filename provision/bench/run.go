package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gpuform/gpuform/internal/jsonformat"
	"github.com/gpuform/gpuform/lint/compat"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/transport"
)

// DefaultBudget bounds one host's bench when neither the flag nor the
// spec's bench { timeout } says otherwise: nvbandwidth's host and peer
// matrices, four all_reduce sweeps and one 10 s ib_write_bw run per NIC
// take a few minutes on an 8-GPU node; a workload at four GPU counts
// takes what it takes, so the spec's timeout is the place to raise it.
const DefaultBudget = 20 * time.Minute

// Options say how to bench hosts.
type Options struct {
	// Target is how hosts are reached: Connect, Parallelism, Progress, as
	// for every command.
	Target target.Options
	// Layers are the layers to measure; empty means all.
	Layers []Layer
	// Budget is the hard limit per host; zero means the node's bench {
	// timeout }, else DefaultBudget.
	Budget time.Duration
	// KB is the knowledge base; nil means compat.Default().
	KB *compat.KB
}

// Run benches every target and returns the report; a host that cannot be
// reached or probed has Error set, the others carry on.
func Run(ctx context.Context, targets []target.Host, o Options) *Report {
	kb := o.KB
	if kb == nil {
		kb = compat.Default()
	}
	layers := o.Layers
	if len(layers) == 0 {
		layers = Layers()
	}
	var mu sync.Mutex
	got := map[string]Host{}
	errs := target.Each(ctx, targets, o.Target, func(ctx context.Context, tg target.Host) error {
		start := time.Now()
		budget := o.Budget
		if budget == 0 && tg.Node != nil && tg.Node.Bench != nil && tg.Node.Bench.Timeout.Set {
			budget = tg.Node.Bench.Timeout.V
		}
		if budget == 0 {
			budget = DefaultBudget
		}
		hctx, cancel := transport.WithTimeout(ctx, budget, "bench of "+tg.Host.Name, "-budget or bench { timeout }")
		defer cancel()
		h, err := benchHost(hctx, kb, o.Target.Connect, tg, layers)
		if err != nil {
			if errors.Is(hctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
				err = fmt.Errorf("the budget of %s per host ran out (raise it with -budget or bench { timeout }): %w", budget, err)
			}
			h = Host{Host: tg.Host.Name, Error: err.Error()}
		}
		h.DurationMS = time.Since(start).Milliseconds()
		mu.Lock()
		got[tg.Host.Name] = h
		mu.Unlock()
		if h.Error != "" {
			return errors.New(h.Error)
		}
		if h.Bottleneck != nil {
			return fmt.Errorf("bottleneck: %s %s", h.Bottleneck.Layer, h.Bottleneck.Device)
		}
		return nil
	})
	r := &Report{FormatVersion: jsonformat.Version, Layers: layers}
	seen := map[string]bool{}
	for _, tg := range targets {
		name := tg.Host.Name
		if seen[name] {
			continue
		}
		seen[name] = true
		h, ok := got[name]
		if !ok {
			msg := "not started"
			if err := errs[name]; err != nil {
				msg = err.Error()
			}
			h = Host{Host: name, Error: msg}
		}
		r.Hosts = append(r.Hosts, h)
	}
	return r
}

func benchHost(ctx context.Context, kb *compat.KB, connect target.Connector, tg target.Host, layers []Layer) (Host, error) {
	t, err := connect(ctx, tg.Host)
	if err != nil {
		return Host{}, err
	}
	defer t.Close()
	node, err := target.ProbeOver(ctx, t, tg.Host)
	if err != nil {
		return Host{}, err
	}
	info := NewHostInfo(kb, tg.Host.Name, node, tg.Node)
	if len(info.GPUs) == 0 {
		return Host{}, fmt.Errorf("no NVIDIA GPU on the PCI bus: nothing to bench")
	}
	co := CollectOptions{Layers: layers}
	if tg.Node != nil {
		co.Bench = tg.Node.Bench
	}
	obs, err := Collect(ctx, t, info, co)
	if err != nil {
		return Host{}, err
	}
	return Judge(kb, info, obs, co.Bench, layers), nil
}
