package verify

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuform/gpuform/provision/local"
	"github.com/gpuform/gpuform/provision/transport"
	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

// countingTransport counts the commands that streamed stdin (uploads) and
// can corrupt the uploaded bytes to prove the checksum is verified.
type countingTransport struct {
	transport.Transport
	uploads int
	corrupt bool
}

func (c *countingTransport) Run(ctx context.Context, cmd transport.Command) (transport.Result, error) {
	if cmd.Stdin != nil {
		c.uploads++
		if c.corrupt {
			data, _ := io.ReadAll(cmd.Stdin)
			data[0] ^= 0xff
			cmd.Stdin = bytes.NewReader(data)
		}
	}
	return c.Transport.Run(ctx, cmd)
}

// TestEnsureAgentLocal runs the upload scripts in a real /bin/sh.
func TestEnsureAgentLocal(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "gpuform")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho agent v1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	tr := &countingTransport{Transport: local.New("localhost", local.WithEnv(map[string]string{"HOME": home}))}
	ctx := context.Background()
	sum := sha256.Sum256([]byte("#!/bin/sh\necho agent v1\n"))
	wantPath := filepath.Join(home, AgentCacheDir, "agent-"+hex.EncodeToString(sum[:]))

	path, uploaded, err := EnsureAgentIn(ctx, tr, bin, "")
	if err != nil || !uploaded || path != wantPath {
		t.Fatalf("first: %q %v %v", path, uploaded, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("uploaded file: %v %v", fi, err)
	}
	if _, uploaded, err := EnsureAgentIn(ctx, tr, bin, ""); err != nil || uploaded || tr.uploads != 1 {
		t.Fatalf("second run uploaded again: %v %v (%d uploads)", uploaded, err, tr.uploads)
	}
	// A remote copy that was tampered with is replaced.
	if err := os.WriteFile(path, []byte("tampered"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, uploaded, err := EnsureAgentIn(ctx, tr, bin, ""); err != nil || !uploaded {
		t.Fatalf("tampered copy kept: %v %v", uploaded, err)
	}
	// Bytes damaged on the way are caught by the checksum after upload.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	tr.corrupt = true
	if _, _, err := EnsureAgentIn(ctx, tr, bin, ""); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Fatalf("corrupted upload accepted: %v", err)
	}
	left, _ := filepath.Glob(filepath.Join(home, AgentCacheDir, ".agent-*"))
	if len(left) != 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
	if _, _, err := EnsureAgentIn(ctx, tr, filepath.Join(t.TempDir(), "missing"), ""); err == nil {
		t.Error("missing local binary accepted")
	}
}

// TestFetchNVMLFallback: without an agent, nvidia-smi is used and the
// report says so; without nvidia-smi either, both reasons are reported.
func TestFetchNVMLFallback(t *testing.T) {
	xml, err := filepath.Abs("smi/testdata/nvidia-smi-q-x-TeslaT4-driver515-v11.xml")
	if err != nil {
		t.Fatal(err)
	}
	stand := t.TempDir()
	if err := os.WriteFile(filepath.Join(stand, "nvidia-smi"), []byte("#!/bin/sh\ncat "+xml+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tr := local.New("localhost", local.WithEnv(map[string]string{"PATH": stand + ":/usr/bin:/bin"}))
	rep, err := FetchNVML(ctx, tr, FetchOptions{})
	if err != nil || rep.Source != "nvidia-smi" || len(rep.GPUs) != 1 || !strings.Contains(strings.Join(rep.Warnings, ""), "no agent binary") {
		t.Fatalf("fallback: %+v %v", rep, err)
	}
	// An agent that cannot execute (another architecture) falls back too.
	bad := filepath.Join(t.TempDir(), "gpuform")
	if err := os.WriteFile(bad, []byte("\x7fELF not really"), 0o755); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	tr = local.New("localhost", local.WithEnv(map[string]string{"PATH": stand + ":/usr/bin:/bin", "HOME": home}))
	rep, err = FetchNVML(ctx, tr, FetchOptions{LocalBinary: bad})
	if err != nil || rep.Source != "nvidia-smi" || !strings.Contains(strings.Join(rep.Warnings, ""), "agent exited") {
		t.Fatalf("bad agent: %+v %v", rep, err)
	}
	// A node said to have no agent is not sent one, even with a binary
	// at hand; the warning gives the reason.
	up := &countingTransport{Transport: local.New("localhost", local.WithEnv(map[string]string{"PATH": stand + ":/usr/bin:/bin", "HOME": t.TempDir()}))}
	rep, err = FetchNVML(ctx, up, FetchOptions{LocalBinary: bad, NoAgent: "the NVML agent cannot run on this node: no agent here"})
	if err != nil || rep.Source != "nvidia-smi" || up.uploads != 0 || !strings.Contains(strings.Join(rep.Warnings, ""), "NVML agent not used: the NVML agent cannot run on this node: no agent here") {
		t.Fatalf("no agent: %+v %v (%d uploads)", rep, err, up.uploads)
	}
	// Neither path, on a node whose PCI bus holds only the BMC's VGA: the
	// message says so first, then both paths' reasons.
	root := pciRoot(t, map[string]string{"0000:03:00.0": "0x1a03 0x030000"})
	tr = local.New("localhost", local.WithEnv(map[string]string{"PATH": t.TempDir() + ":/usr/bin:/bin", "HOME": home, "GPUFORM_ROOT": root}))
	_, err = FetchNVML(ctx, tr, FetchOptions{LocalBinary: bad})
	if err == nil || !strings.HasPrefix(err.Error(), "no NVIDIA GPU on the PCI bus") || !strings.Contains(err.Error(), "agent exited") || strings.Contains(err.Error(), "not found") {
		t.Fatalf("no path at all: %v", err)
	}
}

// pciRoot makes a root whose /sys/bus/pci/devices holds the given devices
// ("vendor class" each).
func pciRoot(t *testing.T, devs map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for addr, vc := range devs {
		dir := filepath.Join(root, "sys/bus/pci/devices", addr)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		v, c, _ := strings.Cut(vc, " ")
		for name, val := range map[string]string{"vendor": v, "class": c} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(val+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return root
}

// TestFetchNVMLSaysWhatIsTrue: a node without nvidia-smi is told whether it
// has NVIDIA GPUs at all (not "eval: nvidia-smi: not found"), and a hung
// nvidia-smi is stopped and named (not "context deadline exceeded").
func TestFetchNVMLSaysWhatIsTrue(t *testing.T) {
	ctx := context.Background()
	noSMI := t.TempDir()
	gpuRoot := pciRoot(t, map[string]string{"0000:03:00.0": "0x1a03 0x030000", "0000:1b:00.0": "0x10de 0x030200"})
	tr := local.New("localhost", local.WithEnv(map[string]string{"PATH": noSMI + ":/usr/bin:/bin", "GPUFORM_ROOT": gpuRoot}))
	_, err := FetchNVML(ctx, tr, FetchOptions{})
	if err == nil || !strings.HasPrefix(err.Error(), "1 NVIDIA GPU(s) on the PCI bus, but nvidia-smi is not installed") {
		t.Errorf("GPU without driver tools: %v", err)
	}

	hung := t.TempDir()
	if err := os.WriteFile(filepath.Join(hung, "nvidia-smi"), []byte("#!/bin/sh\nexec sleep 30\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tr = local.New("localhost", local.WithEnv(map[string]string{"PATH": hung + ":/usr/bin:/bin", "GPUFORM_ROOT": gpuRoot}))
	start := time.Now()
	_, err = FetchNVML(ctx, tr, FetchOptions{SMITimeout: time.Second})
	if err == nil || !strings.Contains(err.Error(), "nvidia-smi -q -x hung: no answer after 1s") || strings.Contains(err.Error(), "deadline exceeded") {
		t.Errorf("hung nvidia-smi: %v", err)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("waited %s for a hung nvidia-smi", took)
	}
}

// TestFetchNVMLFallbackTopology: on the nvidia-smi path the topology
// matrix of `nvidia-smi topo -m` feeds the GPU–NIC and NUMA checks, which
// used to be skipped there. Real captures: an A100's -q -x with an HGX
// A100's matrix (GPU0 reaches mlx5_2 at PXB, mlx5_6 across the SMP link).
func TestFetchNVMLFallbackTopology(t *testing.T) {
	xml, err := filepath.Abs("smi/testdata/nvidia-smi-q-x-A100-sxm4-80gb-mig-driver535-one-of-4.xml")
	if err != nil {
		t.Fatal(err)
	}
	topo, err := filepath.Abs("smi/testdata/topo/topo-m-8xA100-nv12-17nic.txt")
	if err != nil {
		t.Fatal(err)
	}
	stand := t.TempDir()
	script := "#!/bin/sh\nif [ \"$1\" = topo ]; then cat " + topo + "; else cat " + xml + "; fi\n"
	if err := os.WriteFile(filepath.Join(stand, "nvidia-smi"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	tr := local.New("localhost", local.WithEnv(map[string]string{"PATH": stand + ":/usr/bin:/bin"}))
	rep, err := FetchNVML(context.Background(), tr, FetchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Collected(nvmlfacts.FactTopology) || !rep.Collected(nvmlfacts.FactNUMA) || rep.Collected(nvmlfacts.FactNVLink) {
		t.Errorf("not collected: %v, want only nvlink and xid", rep.NotCollected)
	}
	got := map[string]CheckResult{}
	for _, nic := range []string{"mlx5_2", "mlx5_6"} {
		exp := Expectation{KB: testKB, NUMANode: map[int]int{0: 0}, NIC: map[int]NICExpectation{0: {NIC: nic}}}
		for _, r := range Check(exp, rep, HostFacts{}) {
			got[r.ID+" "+nic] = r
		}
	}
	if r := got["nvml.gpu_nic[gpu0] mlx5_2"]; r.Status != StatusPass || r.Observed != "mlx5_2 at PXB" {
		t.Errorf("gpu0–mlx5_2: %+v", r)
	}
	if r := got["nvml.gpu_nic[gpu0] mlx5_6"]; r.Status != StatusFail || !strings.Contains(r.Message, "SYS") {
		t.Errorf("gpu0–mlx5_6: %+v", r)
	}
	if r := got["nvml.numa_node[gpu0] mlx5_2"]; r.Status != StatusPass || r.Observed != "0 (CPUs 0-103)" {
		t.Errorf("numa: %+v", r)
	}
}
