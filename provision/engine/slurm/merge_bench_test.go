package slurm_test

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/gpuform/gpuform/provision/connect"
	"github.com/gpuform/gpuform/provision/engine/slurm"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/transport"
	"github.com/gpuform/gpuform/provision/verify"
	"github.com/gpuform/gpuform/provision/verify/report"
	"github.com/gpuform/gpuform/provision/verify/runner"
	"github.com/gpuform/gpuform/spec"
)

// BenchmarkSlurmMerge is the controller's share of a slurm-engine run
// over 8, 64 and 512 nodes: reading every node's framed report from the
// step's output, decoding it and merging the hosts into one report (peer
// outliers, summary, groups). Each node's report is a real probe-tier
// report of a simulated HGX H100 (8 GPUs, NVML included), framed as the
// node writes it. CPU per node and bytes per node should stay flat as N
// grows: the controller's work is linear in the reports and nothing else.
func BenchmarkSlurmMerge(b *testing.B) {
	dir := b.TempDir()
	_, cfg := quickstartWithB(b, dir, "sim://hgx-h100-converged/gpu001")
	k := kbB(b)
	state := b.TempDir()
	ro := runner.Options{Tier: verify.TierProbe, KB: k, Target: target.Options{Connect: func(ctx context.Context, h spec.Host) (transport.Transport, error) {
		return connect.Open(ctx, h, connect.Options{SimStateDir: state})
	}}}
	tgs, diags := target.Select(cfg, nil)
	if diags.HasErrors() {
		b.Fatal(diags)
	}
	one := runner.Run(context.Background(), tgs, ro).Hosts[0]
	for _, n := range []int{8, 64, 512} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			var step bytes.Buffer
			targets := make([]target.Host, n)
			for i := range n {
				node := fmt.Sprintf("gpu%04d", i)
				h := one
				h.Host = "sim://hgx-h100-converged/" + node
				targets[i] = target.Host{Host: spec.Host{Name: h.Host}, Node: tgs[0].Node}
				if err := slurm.WriteNodeReport(&step, slurm.NewNodeReport(node, []report.Host{h})); err != nil {
					b.Fatal(err)
				}
			}
			out := step.Bytes()
			b.ReportAllocs()
			b.SetBytes(int64(len(out)))
			var ms runtime.MemStats
			for b.Loop() {
				reports, problems := slurm.ReadNodeReports(bytes.NewReader(out), 0)
				if len(reports) != n || len(problems) != 0 {
					b.Fatalf("%d reports, problems %v", len(reports), problems)
				}
				hosts := make([]report.Host, 0, n)
				for i := range n {
					h := reports[fmt.Sprintf("gpu%04d", i)].HostReports()[0]
					hosts = append(hosts, h)
				}
				doc := runner.Merge(targets, hosts, ro, time.Now())
				if doc.Summary.Hosts != n {
					b.Fatalf("merged %d hosts", doc.Summary.Hosts)
				}
			}
			runtime.ReadMemStats(&ms)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n)/1e3, "µs/node")
			b.ReportMetric(float64(len(out))/float64(n), "wire-B/node")
		})
	}
}
