package resource

import (
	"strings"
	"testing"

	"github.com/gpuform/gpuform/provision/facts"
)

// TestNICMTU: each named RDMA device's interfaces get the spec's MTU with
// ip link (one step per interface that differs); a device the host lacks
// or one without an interface is a warning, and every plan says the MTU
// does not persist.
func TestNICMTU(t *testing.T) {
	n := loadNode(t, "affinity {\n  mtu = { mlx5_0 = 4200, mlx5_1 = 4200, mlx5_2 = 4200, mlx5_9 = 4200 }\n}")
	f := debianNode()
	f.RDMA = []facts.RDMADevice{
		{Name: "mlx5_0", NetDevs: []string{"enp24s0np0"}, MTU: map[string]int{"enp24s0np0": 1500}},
		{Name: "mlx5_1", NetDevs: []string{"enp25s0np0"}, MTU: map[string]int{"enp25s0np0": 4200}},
		{Name: "mlx5_2"},
	}
	rs, warnings, err := buildNICMTU(newBuildInput(testKB, n, f))
	if err != nil || len(rs) != 1 {
		t.Fatalf("%v %v", rs, err)
	}
	w := strings.Join(warnings, "\n")
	for _, want := range []string{"mlx5_9 is not on this host", "mlx5_2 has no network interface", "until the next reboot only"} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings lack %q:\n%s", want, w)
		}
	}
	c, err := rs[0].Diff(f)
	if err != nil {
		t.Fatal(err)
	}
	if c.Action != Update || c.Before["mlx5_0 (enp24s0np0)"] != NumberVal(1500) || c.After["mlx5_0 (enp24s0np0)"] != NumberVal(4200) ||
		len(c.Steps) != 1 || callOf(t, c.Steps[0]).String() != "nic_mtu.sh enp24s0np0 4200" {
		t.Fatalf("change %+v", c)
	}
	f.RDMA[0].MTU["enp24s0np0"] = 4200
	if c, _ := rs[0].Diff(f); c.Action != NoOp {
		t.Errorf("converged: %+v", c)
	}
}
