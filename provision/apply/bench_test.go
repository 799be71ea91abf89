package apply_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuform/gpuform/provision/apply"
	"github.com/gpuform/gpuform/provision/plan/plantest"
)

const benchHosts = 50

func benchHostNames() []string {
	hosts := make([]string, benchHosts)
	for i := range hosts {
		hosts[i] = fmt.Sprintf("sim://hgx-h100-stale/%02d", i+1)
	}
	return hosts
}

// peakHeap samples the heap while fn runs and returns the largest value.
func peakHeap(fn func()) uint64 {
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > peak.Load() {
				peak.Store(ms.HeapAlloc)
			}
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	fn()
	close(stop)
	wg.Wait()
	return peak.Load()
}

// BenchmarkPlan50Hosts plans the full HGX node spec for 50 simulated hosts
// reached over a loopback sshd, 10 at a time: one SSH connection and one
// remote command (the probe) per host.
func BenchmarkPlan50Hosts(b *testing.B) {
	f := plantest.Start(b)
	hosts := benchHostNames()
	cfg := loadSpec(b, "node.gpuform.hcl", hosts)
	for _, h := range hosts {
		f.Root(h)
	}
	ctx := context.Background()
	execs := f.Execs()
	var peak uint64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p := peakHeap(func() {
			pl, err := f.Plan(ctx, cfg)
			if err != nil || pl.Errored || !pl.HasChanges() {
				b.Fatalf("plan: %v", err)
			}
		})
		peak = max(peak, p)
	}
	b.StopTimer()
	b.ReportMetric(float64(f.Execs()-execs)/float64(benchHosts*b.N), "execs/host")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
}

// BenchmarkApplyNothingToChange50Hosts runs plan then apply on 50
// converged hosts: apply must add nothing to the plan's cost (no lock, no
// step, no re-probe), so execs/host equals BenchmarkPlan50Hosts's.
func BenchmarkApplyNothingToChange50Hosts(b *testing.B) {
	f := plantest.Start(b)
	hosts := benchHostNames()
	cfg := loadSpec(b, "sysctl.gpuform.hcl", hosts, "batch        = 4", "batch        = 50")
	ctx := context.Background()
	p, err := f.Plan(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	if rep := apply.Apply(ctx, cfg, p, apply.Options{KB: testKB, Target: f.Options()}); !rep.Converged() {
		b.Fatalf("converging the fleet: %+v", rep.Hosts[0])
	}
	execs := f.Execs()
	var planTime, applyTime time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		p, err := f.Plan(ctx, cfg)
		if err != nil || p.HasChanges() {
			b.Fatalf("plan of a converged fleet: %v", err)
		}
		t1 := time.Now()
		rep := apply.Apply(ctx, cfg, p, apply.Options{KB: testKB, Target: f.Options()})
		applyTime += time.Since(t1)
		planTime += t1.Sub(t0)
		if !rep.Converged() {
			b.Fatal("apply of a converged fleet failed")
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(f.Execs()-execs)/float64(benchHosts*b.N), "execs/host")
	b.ReportMetric(float64(planTime.Milliseconds())/float64(b.N), "plan-ms/op")
	b.ReportMetric(float64(applyTime.Microseconds())/float64(b.N), "apply-us/op")
}
