package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuform/gpuform/internal/jsonformat"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/sim"
)

func runCLIEnv(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(context.Background(), args, Streams{In: strings.NewReader(""), Out: &out, Err: &errb, Environ: append([]string{"NO_COLOR=1"}, env...)})
	return code, out.String(), errb.String()
}

func TestFactsOnSimulatedNode(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	env := []string{"GPUFORM_SIM_STATE=" + state}
	code, out, errOut := runCLIEnv(t, env, "facts", "-json", "../../examples/quickstart")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc facts.Document
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.FormatVersion != jsonformat.Version || len(doc.Hosts) != 1 || doc.Hosts[0].Facts == nil {
		t.Fatalf("document: %+v", doc)
	}
	n := doc.Hosts[0].Facts
	if n.Driver == nil || !strings.HasPrefix(n.Driver.Version, "535.") || len(n.NVIDIAGPUs()) != 8 {
		t.Errorf("facts of sim://hgx-h100-stale: driver %+v, %d GPUs", n.Driver, len(n.NVIDIAGPUs()))
	}
	// The board's ASPEED BMC VGA is a display, not a ninth GPU.
	for _, d := range n.PCI {
		if d.Kind == facts.KindGPU && d.Vendor != facts.VendorNVIDIA {
			t.Errorf("%s (vendor %s) is listed as a GPU", d.Address, d.Vendor)
		}
	}
	if len(n.GPUs()) != 8 || len(n.Displays()) != 1 {
		t.Errorf("%d GPUs and %d displays, want 8 and the BMC's", len(n.GPUs()), len(n.Displays()))
	}
	if n.Hostname != "hgx-h100-stale" || n.MachineID == "" {
		t.Errorf("host name %q, machine id %q: the node's own identity is missing", n.Hostname, n.MachineID)
	}

	code, out, _ = runCLIEnv(t, env, "facts", "../../examples/quickstart")
	if code != ExitOK || !strings.Contains(out, "sim://hgx-h100-stale") || !strings.Contains(out, "8 GPU(s)") {
		t.Errorf("text: exit %d\n%s", code, out)
	}

	code, _, errOut = runCLIEnv(t, env, "facts", "-target", "gpu999", "../../examples/quickstart")
	if code != ExitFailed || !strings.Contains(errOut, `no node in the spec has host "gpu999"`) {
		t.Errorf("unknown target: exit %d %s", code, errOut)
	}
}

func TestFactsRoot(t *testing.T) {
	t.Parallel()
	root, err := sim.Materialize("l40s-rocky9", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLIEnv(t, nil, "facts", "--root", root, "-json")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc facts.Document
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if f := doc.Hosts[0].Facts; f == nil || f.OS.ID != "rocky" {
		t.Errorf("facts --root: %+v", doc.Hosts[0])
	}
}

// A spec whose host cannot be reached reports that host and exits 1.
func TestFactsUnreachableHost(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir+"/main.gpuform.hcl", `node "a" { hosts = ["sim://no-such-profile"] }`)
	code, out, errOut := runCLIEnv(t, []string{"GPUFORM_SIM_STATE=" + t.TempDir()}, "facts", dir)
	if code != ExitFailed || !strings.Contains(out, "sim://no-such-profile") || !strings.Contains(out, "error:") {
		t.Errorf("exit %d\n%s", code, out)
	}
	// The error is the listing's to say, once; progress only names the host.
	if n := strings.Count(out+errOut, "unknown simulated profile"); n != 1 {
		t.Errorf("the host's error is printed %d times, want once:\nstdout:\n%s\nstderr:\n%s", n, out, errOut)
	}
	if !strings.Contains(out, "HOST") || !strings.Contains(out, "STATUS") {
		t.Errorf("no fleet table:\n%s", out)
	}
}

// TestFactsEndlessOutput: a node whose probe output has no end (here a
// sparse 1 TiB /etc/fstab, which the probe sends as hex) fails with a
// clear error once the output passes 64 MiB, instead of the controller
// reading it into memory until it runs out: the transport's limit on a
// plain stream, the parser's once a compressed one (which the node cuts
// at the limit) is inflated.
func TestFactsEndlessOutput(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(root, "etc/fstab"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 40); err != nil {
		f.Close()
		t.Skipf("no sparse 1 TiB file here: %v", err)
	}
	f.Close()
	start := time.Now()
	code, out, errOut := runPA(t, nil, "", "facts", "--root", root)
	want := "output: the command wrote more than 64 MiB to its stdout and was stopped"
	wantCompressed := "probe output exceeds the limit of 64 MiB once decompressed"
	if code != ExitFailed || !strings.Contains(out+errOut, want) && !strings.Contains(out+errOut, wantCompressed) {
		t.Errorf("exit %d, want 1 and %q (or, compressed, %q)\nstdout:\n%s\nstderr:\n%s", code, want, wantCompressed, out, errOut)
	}
	if took := time.Since(start); took > 60*time.Second {
		t.Errorf("took %s to give up on endless output", took)
	}
}

// TestFactsJSONInterruptedIsOneDocument: facts -json writes each host as
// soon as the hosts before it are written, so an interruption while the
// first host's probe hangs (the second one done, its entry waiting) must
// still end with one whole document: every host in spec order, the hung
// one with its error, exit 1.
func TestFactsJSONInterruptedIsOneDocument(t *testing.T) {
	state := t.TempDir()
	env := []string{"GPUFORM_SIM_STATE=" + state}
	args := []string{"facts", "-json", "-var", `hosts=["sim://hgx-h100-stale", "sim://hgx-h100-stale/2"]`, "testdata/planapply"}
	if code, out, errOut := runCLIEnv(t, env, args...); code != ExitOK {
		t.Fatalf("facts: exit %d\n%s\n%s", code, out, errOut)
	}
	hangProbe(t, filepath.Join(state, "hgx-h100-stale"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(5*time.Second, cancel)
	var out, errb bytes.Buffer
	code := Run(ctx, args, Streams{In: strings.NewReader(""), Out: &out, Err: &errb, Environ: append([]string{"NO_COLOR=1"}, env...)})
	var doc facts.Document
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("stdout is not one JSON document: %v\n%s\nstderr:\n%s", err, out.String(), errb.String())
	}
	if code != ExitFailed || len(doc.Hosts) != 2 || doc.Hosts[0].Host != "sim://hgx-h100-stale" || doc.Hosts[1].Host != "sim://hgx-h100-stale/2" {
		t.Fatalf("exit %d, hosts %+v\nstderr:\n%s", code, doc.Hosts, errb.String())
	}
	if doc.Hosts[0].Error == "" || doc.Hosts[0].Facts != nil {
		t.Errorf("the hung host: error %q, facts %v; want its error and no facts", doc.Hosts[0].Error, doc.Hosts[0].Facts != nil)
	}
	if second := doc.Hosts[1]; (second.Facts == nil) == (second.Error == "") {
		t.Errorf("the second host: error %q, facts %v; want one of them", second.Error, second.Facts != nil)
	}
	t.Logf("the second host: facts %v, error %q", doc.Hosts[1].Facts != nil, doc.Hosts[1].Error)
}
