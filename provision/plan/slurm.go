package plan

import (
	"context"
	"fmt"
	"sync"

	"github.com/gpuform/gpuform/provision/slurm"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/transport"
	"github.com/gpuform/gpuform/spec"
)

// The Slurm preview is part of the plan: for a node with drain = "slurm"
// the plan shows what apply will do with each host in Slurm (drain, leave
// an admin's drain alone, resume a stale drain of gpuform's), from the
// state Slurm shows when planned. It lives here, not in provision/apply,
// so that Run makes the whole plan and plan never imports apply; apply
// reaches Slurm through the same SlurmNodeName and SlurmClient.

// SlurmNodeName is the Slurm node name of a host: rollout's
// slurm_node_name template, else the short host name, which without a
// slurm_client is read on the node itself ("").
func SlurmNodeName(host string, nr NodeRollout) (string, error) {
	switch {
	case nr.SlurmNodeName != "":
		return spec.SlurmNodeName(nr.SlurmNodeName, host)
	case nr.SlurmClient != "":
		return spec.SlurmNodeName("{short}", host)
	}
	return "", nil
}

// SlurmClient returns the scontrol client for a host: on the host itself
// over tr, or on rollout { slurm_client } over a connection of its own
// (made with o), which the returned func closes.
func SlurmClient(ctx context.Context, tr transport.Transport, host string, nr NodeRollout, o target.Options) (slurm.Client, func(), error) {
	name, err := SlurmNodeName(host, nr)
	if err != nil {
		return slurm.Client{}, nil, fmt.Errorf("slurm_node_name: %w", err)
	}
	if nr.SlurmClient == "" {
		return slurm.Client{Tr: tr, Name: name, Become: true}, func() {}, nil
	}
	ct, err := o.Connect(ctx, spec.Host{Name: nr.SlurmClient})
	if err != nil {
		return slurm.Client{}, nil, fmt.Errorf("slurm_client %s: %w", nr.SlurmClient, err)
	}
	return slurm.Client{Tr: ct, Name: name, Become: true}, func() { ct.Close() }, nil
}

// previewSlurm reads the Slurm state of every planned host of a node with
// drain = "slurm" and records in the plan what apply will do there. It
// changes nothing. A host whose state cannot be read gets the error in
// its SlurmPlan; apply reads the state again before it acts.
func previewSlurm(ctx context.Context, p *Plan, o target.Options) {
	rollouts := map[string]NodeRollout{}
	for _, nr := range p.Nodes {
		rollouts[nr.Name] = nr
	}
	var hosts []target.Host
	for _, hp := range p.Hosts {
		if nr, ok := rollouts[hp.Node]; ok && nr.Drain == spec.DrainSlurm && hp.Error == "" {
			hosts = append(hosts, hp.Target)
		}
	}
	if len(hosts) == 0 {
		return
	}
	o.Progress = nil
	results := make(map[string]*SlurmPlan, len(hosts))
	var mu sync.Mutex
	target.Each(ctx, hosts, o, func(ctx context.Context, h target.Host) error {
		hp := p.Host(h.Host.Name)
		sp := previewSlurmHost(ctx, hp, rollouts[hp.Node], o)
		mu.Lock()
		results[h.Host.Name] = sp
		mu.Unlock()
		return nil
	})
	for _, hp := range p.Hosts {
		if sp, ok := results[hp.Host]; ok {
			hp.Slurm = sp
		}
	}
}

func previewSlurmHost(ctx context.Context, hp *HostPlan, nr NodeRollout, o target.Options) *SlurmPlan {
	sp := &SlurmPlan{Action: SlurmNone}
	if name, err := SlurmNodeName(hp.Host, nr); err == nil {
		sp.Node = name
	}
	tr, err := o.Connect(ctx, hp.Target.Host)
	if err != nil {
		sp.Error = err.Error()
		return sp
	}
	defer tr.Close()
	cl, done, err := SlurmClient(ctx, tr, hp.Host, nr, o)
	if err != nil {
		sp.Error = err.Error()
		return sp
	}
	defer done()
	n, err := cl.Show(ctx)
	sp.Node = n.Name
	if err != nil {
		sp.Error = err.Error()
		return sp
	}
	sp.State, sp.Reason = n.State, n.Reason
	work := hp.HasChanges() || hp.RebootPending && nr.Reboot != spec.RebootNever
	switch {
	case n.Foreign() && !work:
	case n.Foreign() && nr.ForeignDrain == spec.ForeignDrainChange:
		sp.Action = SlurmChangeForeign
	case n.Foreign():
		sp.Action = SlurmSkipForeign
	case work:
		sp.Action = SlurmDrain
	case n.Own() && n.OutOfService() && !hp.RebootPending:
		sp.Action = SlurmResumeStale
	}
	return sp
}
