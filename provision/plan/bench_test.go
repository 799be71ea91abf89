package plan_test

import (
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/gpuform/gpuform/internal/procmeter"
	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/provision/plan"
	"github.com/gpuform/gpuform/provision/sim"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/transport"
	"github.com/gpuform/gpuform/spec"
)

// benchRoots is how many simulated roots the plan benchmarks materialise;
// hosts share them round-robin (the probe only reads), so that a fleet of
// 1,000 does not cost 1,000 roots on disk before the timer starts.
const benchRoots = 8

// BenchmarkPlanSim plans testdata/node.gpuform.hcl for 100 and 1,000
// simulated HGX H100 hosts (sim transport: each probe is a real sh on this
// machine, 32 at a time) and renders the text plan, as gpuform plan does.
// cpu-ms/host is the controller's own CPU (getrusage of this process),
// child-cpu-ms/host the simulated nodes' probe shells; peak-rss-MB is the
// process's peak resident set during the loop; retained-B/host is what the
// plan holds a host once made (the live heap with it, less without).
func BenchmarkPlanSim(b *testing.B) {
	k, err := kb.Load()
	if err != nil {
		b.Fatal(err)
	}
	state := b.TempDir()
	roots := make([]string, benchRoots)
	for i := range roots {
		if roots[i], err = sim.MaterializeHost(fmt.Sprintf("sim://hgx-h100-stale/%d", i), state); err != nil {
			b.Fatal(err)
		}
	}
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("hosts=%d", n), func(b *testing.B) {
			names := make([]string, n)
			rootOf := map[string]string{}
			for i := range names {
				names[i] = fmt.Sprintf("sim://hgx-h100-stale/%04d", i)
				rootOf[names[i]] = roots[i%benchRoots]
			}
			cfg := loadNode(b, names...)
			hosts, diags := target.Select(cfg, nil)
			if diags.HasErrors() {
				b.Fatal(diags)
			}
			o := target.Options{Connect: func(_ context.Context, h spec.Host) (transport.Transport, error) {
				return sim.New(h.Name, rootOf[h.Name]), nil
			}}
			var retained int64
			run := func() {
				h0 := liveHeap()
				p, err := plan.Run(context.Background(), k, hosts, o)
				if err != nil {
					b.Fatal(err)
				}
				retained = liveHeap() - h0
				if p.Errored || !p.HasChanges() || len(p.Hosts) != n {
					b.Fatalf("plan of %d hosts: errored %v, changes %v, %d host plans", n, p.Errored, p.HasChanges(), len(p.Hosts))
				}
				if err := plan.RenderText(io.Discard, p, plan.RenderOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			m := procmeter.Start()
			for b.Loop() {
				run()
			}
			m.Stop().ReportPerHost(b, n)
			b.ReportMetric(float64(retained)/float64(n), "retained-B/host")
		})
	}
}
