package nvmlfacts

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestAgentFlagsRoundTrip(t *testing.T) {
	o := AgentOptions{
		Collect: Options{XIDWindow: 2 * time.Second, NICs: []NIC{{Name: "mlx5_0", BusID: "0000:18:00.0"}}, Processes: true},
		Mock:    MockDGXH100,
		Faults: []Fault{{Kind: FaultNVLinkDown, GPU: 3}, {Kind: FaultXID, GPU: 1, Value: 79},
			{Kind: FaultPCIeX8, GPU: -1, BusID: "0000:c3:00.0"}, {Kind: FaultXID, GPU: -1, BusID: "0000:9d:00.0", Value: 79}},
		SysRoot: "/tmp/root",
		// A simulated node reports the driver its root has loaded.
		DriverVersion: "580.95.05",
	}
	args := o.Args()
	want := []string{"--xid-window", "2s", "--nic", "mlx5_0=0000:18:00.0", "--mock", "dgxh100", "--fault", "nvlink_down:3", "--fault", "xid:1:79", "--fault", "pcie_x8@0000:c3:00.0", "--fault", "xid@0000:9d:00.0:79", "--sys-root", "/tmp/root", "--driver-version", "580.95.05", "--processes", "true"}
	if diff := cmp.Diff(want, args); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
	back, err := ParseAgentFlags(args)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(o, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if got, err := ParseAgentFlags([]string{"--mock=dgxa100"}); err != nil || got.Mock != "dgxa100" {
		t.Errorf("inline value: %+v %v", got, err)
	}
	for _, bad := range [][]string{{"--mock"}, {"--what", "x"}, {"stray"}, {"--xid-window", "soon"}, {"--nic", "mlx5_0"}, {"--nic", "mlx5_0=zz"}, {"--fault", "melt:1"}, {"--fault", "pcie_x8@zz"}, {"--fault", "xid@0000:9d:00.0"}, {"--fault", "melt@0000:9d:00.0"}, {"--processes", "maybe"}} {
		if _, err := ParseAgentFlags(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
