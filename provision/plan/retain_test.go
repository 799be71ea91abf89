package plan_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/gpuform/gpuform/provision/plan"
	"github.com/gpuform/gpuform/provision/resource"
	"github.com/gpuform/gpuform/provision/sim"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/transport"
	"github.com/gpuform/gpuform/spec"
)

// probedFleet is n hosts of testdata/node.gpuform.hcl, each with the facts
// of one probe of a simulated HGX H100 (stale, so every host has changes)
// under its own host name: what plan.Make is given for a fleet of like
// nodes, without probing n of them.
func probedFleet(tb testing.TB, n int) []target.Probed {
	tb.Helper()
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("sim://hgx-h100-stale/%04d", i)
	}
	root, err := sim.MaterializeHost(names[0], tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	hosts, diags := target.Select(loadNode(tb, names...), nil)
	if diags.HasErrors() {
		tb.Fatal(diags)
	}
	o := target.Options{
		Connect:  func(_ context.Context, h spec.Host) (transport.Transport, error) { return sim.New(h.Name, root), nil },
		Packages: func(n *spec.Node) []string { return resource.OfferedNames(testKB, n) },
	}
	one, err := target.Probe(context.Background(), hosts[:1], o)
	if err != nil || one[0].Err != nil {
		tb.Fatalf("probe: %v %v", err, one[0].Err)
	}
	out := make([]target.Probed, n)
	for i, h := range hosts {
		f := *one[0].Facts
		f.Hostname = fmt.Sprintf("node%04d", i)
		out[i] = target.Probed{Host: h, Facts: &f}
	}
	return out
}

// liveHeap is the live heap after a full collection.
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// TestPlanRetainsLittlePerHost: what a plan holds for each further host
// of a fleet of like nodes, measured as the live heap of a plan of 2N
// hosts less that of N hosts (the first host's scripts and changes are
// held once either way), stays under a budget. Each host's change list
// used to be its own, 23–26 kB a host (26 MB for a thousand hosts,
// which the collector's headroom doubled); hosts with the same changes
// now share one.
func TestPlanRetainsLittlePerHost(t *testing.T) {
	const n = 100
	const budget = 2048 // bytes a host
	probed := probedFleet(t, 2*n)
	runtime.KeepAlive(plan.Make(testKB, probed[:n])) // compile what is compiled once
	h0 := liveHeap()
	small := plan.Make(testKB, probed[:n])
	h1 := liveHeap()
	large := plan.Make(testKB, probed)
	h2 := liveHeap()
	perHost := ((h2 - h1) - (h1 - h0)) / n
	t.Logf("plan of %d hosts holds %d kB, of %d hosts %d kB: %d bytes a further host", n, (h1-h0)/1024, 2*n, (h2-h1)/1024, perHost)
	if perHost > budget {
		t.Errorf("a planned host holds %d bytes, want at most %d", perHost, budget)
	}
	if len(large.Groups()) != 1 || len(small.Hosts) != n || !large.HasChanges() {
		t.Errorf("plan of %d like hosts: %d groups, changes %v; want one group with changes", 2*n, len(large.Groups()), large.HasChanges())
	}
	runtime.KeepAlive(probed)
}

// BenchmarkPlanMake is the controller's own work of planning N hosts of
// like nodes from their facts (plan.Make, no probing: BenchmarkPlanSim
// probes), per host: its time, what it allocates, and what a planned host
// keeps (retained-B/host: the live heap with the plan, less the heap
// without it).
func BenchmarkPlanMake(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("hosts=%d", n), func(b *testing.B) {
			probed := probedFleet(b, n)
			b.ReportAllocs()
			var retained int64
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			alloc0, mallocs0 := ms.TotalAlloc, ms.Mallocs
			for b.Loop() {
				b.StopTimer()
				h0 := liveHeap()
				b.StartTimer()
				p := plan.Make(testKB, probed)
				b.StopTimer()
				retained = liveHeap() - h0
				runtime.KeepAlive(p)
				b.StartTimer()
			}
			runtime.ReadMemStats(&ms)
			hosts := float64(b.N * n)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/hosts, "ns/host")
			b.ReportMetric(float64(ms.TotalAlloc-alloc0)/hosts, "bytes/host")
			b.ReportMetric(float64(ms.Mallocs-mallocs0)/hosts, "allocs/host")
			b.ReportMetric(float64(retained)/float64(n), "retained-B/host")
		})
	}
}
