//go:build cgo

package verify

import (
	"context"
	"testing"

	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

// BenchmarkVerifyPass is one NVML verify pass over the 8-GPU DGX H100 mock:
// the agent's Collect (no XID window), its JSON round trip to the
// controller, and Check with every check kind on. The target is
// well under 100 ms per host on the controller side.
func BenchmarkVerifyPass(b *testing.B) {
	c := mockCases()[1]
	exp := expectationFor(b, c)
	host := healthyHost(c)
	m, err := nvmlfacts.NewMock(c.mock)
	if err != nil {
		b.Fatal(err)
	}
	opts := nvmlfacts.Options{NICs: m.NICs(), Topology: m}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		rep, err := nvmlfacts.Collect(ctx, m, opts)
		if err != nil {
			b.Fatal(err)
		}
		var buf bytesBuffer
		if err := rep.Encode(&buf); err != nil {
			b.Fatal(err)
		}
		back, err := nvmlfacts.Decode(buf.b)
		if err != nil {
			b.Fatal(err)
		}
		if res := Check(exp, back, host); len(failed(res)) != 0 {
			b.Fatal(failed(res))
		}
	}
}

// BenchmarkCheck is the controller's share alone: judging a decoded report.
func BenchmarkCheck(b *testing.B) {
	c := mockCases()[1]
	exp := expectationFor(b, c)
	host := healthyHost(c)
	rep := collectMock(b, c.mock)
	b.ReportAllocs()
	for b.Loop() {
		Check(exp, rep, host)
	}
}

type bytesBuffer struct{ b []byte }

func (w *bytesBuffer) Write(p []byte) (int, error) { w.b = append(w.b, p...); return len(p), nil }
