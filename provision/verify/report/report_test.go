//go:build cgo

package report

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/gpuform/gpuform/provision/verify"
	"github.com/gpuform/gpuform/provision/verify/nccltest"
	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

var update = flag.Bool("update", false, "rewrite golden files")

// sampleDocument verifies three simulated hosts: a healthy DGX H100, one
// with a downgraded PCIe link and an NVLink down, and one that could not be
// reached.
func sampleDocument(t testing.TB) *Document {
	t.Helper()
	on := true
	f, err := os.Open(filepath.Join("..", "nccltest", "testdata", "all_reduce_perf-8xH100-nvswitch-1node.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	runs, err := nccltest.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	exp := verify.Expectation{
		KB:       testKB,
		GPUCount: 8, GPUModel: "H100", DriverVersion: "550.54.15", PersistenceMode: &on, NVLink: verify.NVLinkAllActive,
		NUMANode: map[int]int{0: 0, 7: 1}, FabricManager: &on,
		NCCL: []verify.NCCLExpectation{
			{Name: "allreduce", Command: "all_reduce_perf -b 128M -e 4G -f 2 -g 8", MinBusBWGBps: 450},
			{Name: "fleet_allreduce", Command: "mpirun -np 16 all_reduce_perf -g 1", MultiNode: true, MinBusBWGBps: 300},
		},
	}
	host := func(name string, faults ...nvmlfacts.Fault) Host {
		m, err := nvmlfacts.NewMock(nvmlfacts.MockDGXH100, faults...)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := nvmlfacts.Collect(context.Background(), m, nvmlfacts.Options{})
		if err != nil {
			t.Fatal(err)
		}
		rep.Source, rep.Mock = nvmlfacts.SourceMock, nvmlfacts.MockDGXH100
		extra := verify.HostFacts{FabricManagerActive: &on, NCCL: map[string]nccltest.Result{"allreduce": {Runs: runs}}}
		return NewHost(name, verify.Check(exp, rep, extra), 1500*time.Millisecond)
	}
	return New(testKB, verify.TierFull, []Host{
		host("gpu001"),
		host("gpu002", nvmlfacts.Fault{Kind: nvmlfacts.FaultPCIeX8, GPU: 3}, nvmlfacts.Fault{Kind: nvmlfacts.FaultNVLinkDown, GPU: 6}),
		UnreachableHost("gpu003", errors.New("dial tcp 10.0.0.3:22: connect: connection refused"), 3*time.Second),
	})
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s (-golden +got):\n%s", name, diff)
	}
}

func TestWriters(t *testing.T) {
	d := sampleDocument(t)
	if d.OK() || d.Summary.HostsFailed != 2 || d.Summary.Failed != 3 || d.Summary.Hosts != 3 {
		t.Errorf("summary %+v", d.Summary)
	}
	tests := []struct {
		golden string
		write  func(*bytes.Buffer) error
	}{
		{"verify.txt", func(b *bytes.Buffer) error { return WriteText(b, d, TextOptions{}) }},
		{"verify-verbose.txt", func(b *bytes.Buffer) error {
			h := d.Hosts[1]
			h.Checks = append(h.Checks[:4:4], h.Checks[len(h.Checks)-12:]...)
			return WriteText(b, New(testKB, d.Tier, []Host{h}), TextOptions{Verbose: true})
		}},
		{"verify.json", func(b *bytes.Buffer) error { return WriteJSON(b, d) }},
		{"verify.junit.xml", func(b *bytes.Buffer) error { return WriteJUnit(b, d) }},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			var b bytes.Buffer
			if err := tt.write(&b); err != nil {
				t.Fatal(err)
			}
			golden(t, tt.golden, b.Bytes())
		})
	}
}

func TestTextColor(t *testing.T) {
	d := sampleDocument(t)
	var plain, color bytes.Buffer
	if err := WriteText(&plain, d, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := WriteText(&color, d, TextOptions{Color: true}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain.String(), "\x1b[") || !strings.Contains(color.String(), "\x1b[1;31mFAIL") {
		t.Error("colour only when asked")
	}
}

// TestJUnitStructure reads the JUnit output back: one testcase per host ×
// check, failures and errors where the checks failed.
func TestJUnitStructure(t *testing.T) {
	d := sampleDocument(t)
	var b bytes.Buffer
	if err := WriteJUnit(&b, d); err != nil {
		t.Fatal(err)
	}
	var back junitSuites
	if err := xml.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	cases, fails := 0, 0
	for i, s := range back.Suites {
		cases += len(s.Cases)
		if len(s.Cases) != len(d.Hosts[i].Checks) || s.Name != d.Hosts[i].Host {
			t.Errorf("suite %s: %d cases for %d checks", s.Name, len(s.Cases), len(d.Hosts[i].Checks))
		}
		for _, c := range s.Cases {
			if c.Failure != nil {
				fails++
			}
		}
	}
	if cases != back.Tests || fails != back.Failures || fails != d.Summary.Failed {
		t.Errorf("tests=%d/%d failures=%d/%d", cases, back.Tests, fails, back.Failures)
	}
}

// TestJUnitSchema validates the output against the Jenkins JUnit schema
// (testdata/junit-10.xsd) with xmllint. CI installs libxml2-utils, so there
// a missing xmllint is a failure; elsewhere the test is skipped.
func TestJUnitSchema(t *testing.T) {
	xmllint, err := exec.LookPath("xmllint")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("xmllint not found: CI must install libxml2-utils to validate JUnit output")
		}
		t.Skip("xmllint not installed (apt-get install libxml2-utils)")
	}
	docs := map[string]*Document{"sample": sampleDocument(t), "empty": New(testKB, verify.TierProbe, nil)}
	// A message carrying XML metacharacters and a terminal escape from a
	// remote host must still produce valid XML.
	docs["hostile"] = New(testKB, verify.TierProbe, []Host{UnreachableHost("n<1>&\"", errors.New("bad \x1b[31mbanner\x00 </failure>"), 0)})
	for name, d := range docs {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteJUnit(&b, d); err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(t.TempDir(), "junit.xml")
			if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(xmllint, "--noout", "--schema", filepath.Join("testdata", "junit-10.xsd"), file).CombinedOutput()
			if err != nil {
				t.Fatalf("xmllint: %v\n%s", err, out)
			}
		})
	}
}

// fleetDocument is 32 simulated DGX H100 hosts with mixed results: 20
// healthy, 2 with a PCIe link at x8 on gpu3, 1 with an NVLink down on gpu6,
// 8 refusing SSH alike and 1 failing authentication.
func fleetDocument(t testing.TB) *Document {
	t.Helper()
	on := true
	exp := verify.Expectation{KB: testKB, GPUCount: 8, GPUModel: "H100", DriverVersion: "550.54.15", PersistenceMode: &on, NVLink: verify.NVLinkAllActive}
	var hosts []Host
	for i := 1; i <= 32; i++ {
		name := fmt.Sprintf("gpu%03d", i)
		var faults []nvmlfacts.Fault
		switch {
		case i > 31:
			hosts = append(hosts, UnreachableHost(name, errors.New("ssh: handshake failed: ssh: unable to authenticate, attempted methods [none publickey]"), time.Second))
			continue
		case i > 23:
			hosts = append(hosts, UnreachableHost(name, errors.New("dial tcp: connect: connection refused"), time.Second))
			continue
		case i == 23:
			faults = []nvmlfacts.Fault{{Kind: nvmlfacts.FaultNVLinkDown, GPU: 6}}
		case i > 20:
			faults = []nvmlfacts.Fault{{Kind: nvmlfacts.FaultPCIeX8, GPU: 3}}
		}
		m, err := nvmlfacts.NewMock(nvmlfacts.MockDGXH100, faults...)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := nvmlfacts.Collect(context.Background(), m, nvmlfacts.Options{})
		if err != nil {
			t.Fatal(err)
		}
		rep.Source, rep.Mock = nvmlfacts.SourceMock, nvmlfacts.MockDGXH100
		hosts = append(hosts, NewHost(name, verify.Check(exp, rep, verify.HostFacts{}), time.Second))
	}
	return New(testKB, verify.TierProbe, hosts)
}

// TestFleetGrouped: 32 hosts with five distinct outcomes read as five
// blocks (hosts folded, each error once), and the JSON says the same in
// its groups while keeping every host with its GPUs' identities.
func TestFleetGrouped(t *testing.T) {
	d := fleetDocument(t)
	var text bytes.Buffer
	if err := WriteText(&text, d, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	golden(t, "fleet-32.txt", text.Bytes())
	if n := strings.Count(text.String(), "connection refused"); n != 1 {
		t.Errorf("the shared error is printed %d times, want once", n)
	}
	if lines := strings.Count(text.String(), "\n"); lines > 40 {
		t.Errorf("%d lines for 32 hosts with 5 distinct outcomes:\n%s", lines, text.String())
	}
	var js bytes.Buffer
	if err := WriteJSON(&js, d); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Hosts []struct {
			Checks []verify.CheckResult `json:"checks"`
		} `json:"hosts"`
		Summary Summary `json:"summary"`
		Groups  []Group `json:"groups"`
	}
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Hosts) != 32 || len(back.Groups) != 5 {
		t.Fatalf("%d hosts, %d groups, want 32 and 5", len(back.Hosts), len(back.Groups))
	}
	short, err := json.MarshalIndent(struct {
		Summary Summary `json:"summary"`
		Groups  []Group `json:"groups"`
	}{back.Summary, back.Groups}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "fleet-32.groups.json", append(short, '\n'))
	// The failed PCIe check of gpu021 names the GPU as an RMA ticket needs it.
	for _, c := range back.Hosts[20].Checks {
		if c.ID == "nvml.pcie_link[gpu3]" {
			if c.Status != verify.StatusFail || c.GPU == nil || c.GPU.Index != 3 || c.GPU.BusID != "00000000:61:00.0" || c.GPU.UUID == "" || c.GPU.Serial == "" {
				t.Errorf("failed check without the GPU's identity: %+v %+v", c, c.GPU)
			}
		}
	}
}
