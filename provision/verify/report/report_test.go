//go:build cgo

package report

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"flag"
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
	return New(verify.TierFull, []Host{
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
			return WriteText(b, New(d.Tier, []Host{h}), TextOptions{Verbose: true})
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
	if strings.Contains(plain.String(), "\x1b[") || !strings.Contains(color.String(), ansiRed+ansiBold+"FAIL") {
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
	docs := map[string]*Document{"sample": sampleDocument(t), "empty": New(verify.TierProbe, nil)}
	// A message carrying XML metacharacters and a terminal escape from a
	// remote host must still produce valid XML.
	docs["hostile"] = New(verify.TierProbe, []Host{UnreachableHost("n<1>&\"", errors.New("bad \x1b[31mbanner\x00 </failure>"), 0)})
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
