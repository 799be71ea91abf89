package facts_test

import (
	"context"
	"testing"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/resource"
	"github.com/gpuform/gpuform/provision/sim"
	"github.com/gpuform/gpuform/provision/transport"
)

// BenchmarkProbeSim measures one whole probe (script run + parse) of the
// largest simulated node, a 224-CPU HGX H100.
func BenchmarkProbeSim(b *testing.B) {
	root, err := sim.Materialize("hgx-h100-converged", b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	tr := sim.New("sim://hgx-h100-converged", root)
	for b.Loop() {
		if _, err := facts.Probe(context.Background(), tr, facts.Options{Reads: resource.Reads()}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParse measures parsing alone, the part done on the controller
// for every host of a fleet.
func BenchmarkParse(b *testing.B) {
	root, err := sim.Materialize("hgx-h100-converged", b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	res, err := sim.New("x", root).Run(context.Background(), transport.Command{
		Script: facts.Script(resource.Reads()), Env: map[string]string{"GPUFORM_PROBE_NONCE": "b1"},
	})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(res.Stdout)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := facts.Parse(res.Stdout); err != nil {
			b.Fatal(err)
		}
	}
}
