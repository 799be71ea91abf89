//go:build cgo

package verify

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuform/gpuform/internal/sshtest"
	"github.com/gpuform/gpuform/provision/ssh"
	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

// TestAgentOverSSH copies a real agent binary to a node over a real
// OpenSSH sshd on 127.0.0.1: the first run uploads it, the second reuses it
// (no second upload), the checksum is verified, and the agent's report
// (simulated DGX H100 with a downgraded PCIe link) is judged.
func TestAgentOverSSH(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an agent binary and starts sshd")
	}
	// The harness gives every session a temporary HOME, so the agent cache
	// goes there, not to the home of whoever runs the tests.
	srv := sshtest.Start(t, sshtest.Options{})
	home := srv.Home

	agent := filepath.Join(t.TempDir(), "gpuform-agent")
	build := exec.Command("go", "build", "-o", agent, "./internal/testagent")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the test agent: %v\n%s", err, out)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := ssh.Dial(ctx, srv.Host, ssh.Options{
		User: srv.User, Port: srv.Port, IdentityFiles: []string{srv.UserKeyFile},
		KnownHostsFiles: []string{srv.KnownHostsFile}, SSHConfigPath: ssh.NoConfig,
		Getenv: func(string) string { return "" }, ConnectTimeout: 10 * time.Second,
	})
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	defer c.Close()

	path, uploaded, err := EnsureAgentIn(ctx, c, agent, "")
	if err != nil || !uploaded {
		t.Fatalf("first EnsureAgentIn: %q %v %v", path, uploaded, err)
	}
	if !strings.HasPrefix(path, filepath.Join(home, AgentCacheDir, "agent-")) {
		t.Errorf("agent stored at %s, want under %s", path, filepath.Join(home, AgentCacheDir))
	}
	again, uploaded, err := EnsureAgentIn(ctx, c, agent, "")
	if err != nil || uploaded || again != path {
		t.Fatalf("second EnsureAgentIn uploaded again: %q %v %v", again, uploaded, err)
	}

	rep, err := FetchNVML(ctx, c, FetchOptions{
		LocalBinary: agent,
		Agent: nvmlfacts.AgentOptions{Mock: nvmlfacts.MockDGXH100, Faults: []nvmlfacts.Fault{{Kind: nvmlfacts.FaultPCIeX8, GPU: 3}},
			Collect: nvmlfacts.Options{XIDWindow: 50 * time.Millisecond}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Source != nvmlfacts.SourceMock || len(rep.GPUs) != 8 || len(rep.NICTopology) != 64 || rep.XID == nil || rep.XID.WindowMS != 50 {
		t.Fatalf("report: source %q, %d GPUs, %d NIC pairs", rep.Source, len(rep.GPUs), len(rep.NICTopology))
	}
	on := true
	exp := Expectation{KB: testKB, GPUCount: 8, GPUModel: "H100", ECC: &on, NVLink: NVLinkAllActive, NIC: map[int]NICExpectation{3: {NIC: "mlx5_5"}}}
	if got := failed(Check(exp, rep, HostFacts{})); strings.Join(got, ",") != "nvml.pcie_link[gpu3]" {
		t.Errorf("failed checks %v, want only nvml.pcie_link[gpu3]", got)
	}
}
