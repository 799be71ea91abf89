package fleet

import (
	"context"
	"testing"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/resource"
	"github.com/gpuform/gpuform/provision/sim"
	"github.com/gpuform/gpuform/provision/transport"
)

// BenchmarkFleetProbe50 runs the facts probe once on each of 50 hosts over
// real sshd (the same fleet as BenchmarkFleetTrue50), each probe reading a
// simulated HGX H100 root through the root prefix, and parses the output.
// Compare its ns/op with BenchmarkFleetTrue50: the probe must cost one
// session per host (sessions/host = 1) and stay close to the bare
// connection cost.
func BenchmarkFleetProbe50(b *testing.B) {
	root, err := sim.Materialize("hgx-h100-stale", b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	benchmarkFleet(b, 50, DefaultParallelism, func(ctx context.Context, t transport.Transport) error {
		n, err := facts.Probe(ctx, t, facts.Options{Reads: resource.Reads(), Root: root})
		if err == nil && len(n.NVIDIAGPUs()) != 8 {
			b.Errorf("%s: probe saw %d GPUs", t.Host(), len(n.NVIDIAGPUs()))
		}
		return err
	})
}
