package kubernetes

import (
	"slices"
	"testing"

	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/spec"
)

// A launch's workers hold the GPUs of the nodes its command runs on:
// those its host list names, and where the list names a host the run
// does not know as a node (an address, an alias of one of them), every
// node of the group, so that no node of the group the command may reach
// under another name is left unheld.
func TestLaunchPeers(t *testing.T) {
	t.Parallel()
	train := &spec.Node{Name: "train"}
	other := &spec.Node{Name: "other"}
	l := &launches{byHost: map[string]*member{}, byNode: map[string]*member{}}
	var ms []*member
	for i, n := range []struct {
		node string
		blk  *spec.Node
	}{{"gpu1", train}, {"gpu2", train}, {"gpu3", train}, {"gpu4", train}, {"cpu1", other}} {
		m := &member{tg: target.Host{Host: spec.Host{Name: n.node + ".example.com"}, Node: n.blk}, node: n.node, index: i}
		ms = append(ms, m)
		l.byHost[m.tg.Host.Name], l.byNode[m.node] = m, m
	}
	for _, c := range []struct {
		name, command string
		want          []string
	}{
		{"the nodes it names", "mpirun -np 16 -H gpu1:8,gpu3:8 all_reduce_perf -b 8M", []string{"gpu3"}},
		{"no host list: the group", "mpirun -np 32 all_reduce_perf -b 8M", []string{"gpu2", "gpu3", "gpu4"}},
		{"names the run does not know: the group", "mpirun -np 16 -H 10.0.0.1:8,10.0.0.2:8 all_reduce_perf", []string{"gpu2", "gpu3", "gpu4"}},
		{"some names it does not know: the group too", "mpirun -np 24 -H gpu1:8,gpu2:8,10.0.0.4:8 all_reduce_perf", []string{"gpu2", "gpu3", "gpu4"}},
		{"a host file: the group", "mpirun -np 32 --hostfile /etc/hosts.mpi all_reduce_perf", []string{"gpu2", "gpu3", "gpu4"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, p := range l.peers(ms[0], c.command) {
				got = append(got, p.node)
			}
			slices.Sort(got)
			if !slices.Equal(got, c.want) {
				t.Errorf("peers %v, want %v", got, c.want)
			}
		})
	}
}
