package plan

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/resource"
	"github.com/gpuform/gpuform/spec"
)

// gpuDevices are n NVIDIA GPUs of PCI device ID id.
func gpuDevices(id string, n int) []facts.PCIDevice {
	var out []facts.PCIDevice
	for i := 0; i < n; i++ {
		out = append(out, facts.PCIDevice{Kind: facts.KindGPU, Vendor: facts.VendorNVIDIA, Device: id, NUMANode: -1})
	}
	return out
}

// driverChange is driver_package planned to version v.
func driverChange(a resource.Action, v string) ResourceChange {
	return ResourceChange{Change: resource.Change{Resource: resource.DriverPackage, Action: a}, After: Attrs{"version": {Value: resource.StringVal(v)}}}
}

// TestJudgeImages: plan judges each NGC image against the driver the host
// runs after apply (driver_package's release, else the loaded driver) on
// the GPUs the PCI bus names (else the spec's hardware block), and its
// verdict is the knowledge base's.
func TestJudgeImages(t *testing.T) {
	const triton2405 = "nvcr.io/nvidia/tritonserver:24.05-py3" // R545; data-center exceptions R470, R525, R535
	h100 := gpuDevices("0x2330", 8)
	for name, tc := range map[string]struct {
		hardware *spec.Hardware
		pci      []facts.PCIDevice
		loaded   string
		changes  []ResourceChange
		want     []string // "severity driver from class"
	}{
		"planned driver below the branch, H100 from the PCI bus": {
			pci: h100, loaded: "550.127.08", changes: []ResourceChange{driverChange(resource.Update, "530.30.02")},
			want: []string{"error 530.30.02 planned data-center GPU"},
		},
		// The package revision is not part of the driver release.
		"planned Debian package version": {
			pci: h100, changes: []ResourceChange{driverChange(resource.Create, "530.30.02-0ubuntu1")},
			want: []string{"error 530.30.02 planned data-center GPU"},
		},
		// R535 has a data-center exception for the image.
		"planned driver meets an exception": {
			pci: h100, changes: []ResourceChange{driverChange(resource.Update, "535.183.06")},
		},
		"no driver pinned: the loaded one": {
			pci: h100, loaded: "530.30.02",
			want: []string{"error 530.30.02 loaded data-center GPU"},
		},
		"no driver at all": {pci: h100},
		// The PCI bus shows GPUs the knowledge base cannot name.
		"class from the hardware block": {
			hardware: &spec.Hardware{GPUModel: "H100-SXM5-80GB", GPUCount: 8}, pci: gpuDevices("0xffff", 8),
			changes: []ResourceChange{driverChange(resource.Update, "530.30.02")},
			want:    []string{"error 530.30.02 planned data-center GPU"},
		},
		// Without GPUs the class is unknown: R535 runs the image on a
		// data-center GPU only, so it may not run.
		"no GPUs known": {
			changes: []ResourceChange{driverChange(resource.Update, "535.183.06")},
			want:    []string{"warning 535.183.06 planned GPU of unknown class"},
		},
		// Below every exception both classes fail: an error.
		"no GPUs known, below every exception": {
			changes: []ResourceChange{driverChange(resource.Update, "520.61.05")},
			want:    []string{"error 520.61.05 planned GPU of unknown class"},
		},
		"unreadable driver": {pci: h100, changes: []ResourceChange{driverChange(resource.Update, "latest")}},
	} {
		t.Run(name, func(t *testing.T) {
			n := &spec.Node{Name: "n", Hardware: tc.hardware, Container: &spec.Container{Images: []spec.Attr[string]{
				{V: triton2405, Set: true}, {V: "docker.io/library/ubuntu:24.04", Set: true}}}}
			f := &facts.Node{PCI: tc.pci}
			if tc.loaded != "" {
				f.Driver = &facts.Driver{Version: tc.loaded}
			}
			var got []string
			kbase := testKB
			im, _ := kbase.NGCImage(triton2405)
			for _, v := range judgeImages(testKB, n, f, tc.changes) {
				got = append(got, strings.Join([]string{string(v.Severity), v.Driver, string(v.DriverFrom), v.GPUClass}, " "))
				if v.Image != triton2405 || v.Source == "" || !strings.Contains(v.Message, v.Driver) {
					t.Errorf("verdict %+v: want the image, its source and the driver in the message", v)
				}
				// The verdict is compat's, whatever the message says.
				d, _ := kb.ParseDriverVersion(v.Driver)
				_, class := hostGPUClass(kbase, n, f)
				if want := kbase.ImageDriver(im, d, class).Verdict; (want == kb.VerdictError) != (v.Severity == ImageError) {
					t.Errorf("verdict %s, compat says %s", v.Severity, want)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("verdicts (-want +got):\n%s", diff)
			}
		})
	}
}

// Image verdicts travel in the JSON plan and a plan file, keep hosts with
// different verdicts in different groups, and read as Terraform-style
// errors and warnings in the text plan.
func TestImageVerdictsInPlan(t *testing.T) {
	v := ImageVerdict{Image: "nvcr.io/nvidia/tritonserver:24.05-py3", Severity: ImageError, Driver: "530.30.02", DriverFrom: DriverPlanned,
		GPU: "H100 SXM5 80GB (HGX/DGX H100)", GPUClass: "data-center GPU", Message: "image needs R545", Source: "https://docs.nvidia.com/x"}
	w := v
	w.Severity, w.Message = ImageWarning, "image may not run"
	p := &Plan{Hosts: []*HostPlan{
		{Host: "a", Node: "n", ResourceChanges: []ResourceChange{}, Images: []ImageVerdict{v}},
		{Host: "b", Node: "n", ResourceChanges: []ResourceChange{}, Images: []ImageVerdict{v}},
		{Host: "c", Node: "n", ResourceChanges: []ResourceChange{}, Images: []ImageVerdict{w}},
	}}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Hosts []struct {
			Host   string
			Images []map[string]any
		}
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	imageJSON := func(severity, message string) []map[string]any {
		return []map[string]any{{"image": "nvcr.io/nvidia/tritonserver:24.05-py3", "severity": severity, "driver": "530.30.02", "driver_from": "planned",
			"gpu": "H100 SXM5 80GB (HGX/DGX H100)", "gpu_class": "data-center GPU", "message": message, "source": "https://docs.nvidia.com/x"}}
	}
	wantHosts := []struct {
		Host   string
		Images []map[string]any
	}{{"a", imageJSON("error", "image needs R545")}, {"b", imageJSON("error", "image needs R545")}, {"c", imageJSON("warning", "image may not run")}}
	if diff := cmp.Diff(wantHosts, doc.Hosts); diff != "" {
		t.Errorf("JSON plan's image verdicts (-want +got):\n%s", diff)
	}
	var back Plan
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(p.Hosts[2].Images, back.Hosts[2].Images); diff != "" {
		t.Errorf("read back (-want +got):\n%s", diff)
	}
	if g := p.Groups(); len(g) != 2 || len(g[0].Hosts) != 2 {
		t.Errorf("hosts with different image verdicts share a group: %d groups", len(g))
	}
	var text bytes.Buffer
	if err := RenderText(&text, p, RenderOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"  Error: image needs R545 [H100 SXM5 80GB (HGX/DGX H100), data-center GPU]\n    source: https://docs.nvidia.com/x\n",
		"  Warning: image may not run [H100 SXM5 80GB (HGX/DGX H100), data-center GPU]\n",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text plan lacks %q:\n%s", want, text.String())
		}
	}
}
