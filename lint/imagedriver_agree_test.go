package lint

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/plan"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/verify"
	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
	"github.com/gpuform/gpuform/spec"
)

// TestImageDriverAgreement walks every NGC image of the knowledge base, on
// every driver the tables name (each forward-compatibility exception, a
// release just below it, each CUDA toolkit driver, each branch floor), on
// every GPU model and on a node without hardware, and checks that the three
// layers that judge an image report exactly what kb.ImageDriver
// decides (nothing, a warning or an error): lint's container_image_driver
// on the pinned driver, plan on the driver its driver_package installs,
// and verify's container.image_driver on the driver the host has loaded.
// It also checks the decision itself honours the status of its facts: no
// error on a weak fact, none on a data-center GPU whose exception list is
// unknown.
func TestImageDriverAgreement(t *testing.T) {
	kbase := testKB
	images := kbase.NGCImages()
	drivers := agreementDrivers(t, kbase)
	gpus := []string{""} // no hardware: class unknown
	for _, g := range kbase.GPUModels() {
		gpus = append(gpus, g.Name)
	}
	checked, errs := 0, 0
	for _, gpu := range gpus {
		class := kb.GPUClassUnknown
		if gpu != "" {
			class, _ = kbase.GPUClassOf(gpu)
		}
		var src strings.Builder
		var refs []string
		for _, im := range images {
			refs = append(refs, fmt.Sprintf("%q", im.Image))
		}
		for i, d := range drivers {
			fmt.Fprintf(&src, "node \"n%d\" {\n  hosts = [\"h%d.example.com\"]\n", i, i)
			if gpu != "" {
				fmt.Fprintf(&src, "  hardware = { gpu_model = %q, gpu_count = 8, interconnect = \"pcie\" }\n", gpu)
			}
			fmt.Fprintf(&src, "  driver { version = %q }\n  container { images = [%s] }\n}\n", d.String(), strings.Join(refs, ", "))
		}
		cfg := loadSpec(t, map[string]string{"agree.gpuform.hcl": src.String()})
		res, diags := Run(cfg, Options{KB: testKB, Now: testNow, MinSeverity: Info})
		if diags.HasErrors() {
			t.Fatal(diags.Error())
		}
		got := map[string]Severity{}
		for _, f := range res.Findings {
			if f.Rule != "container_image_driver" {
				continue
			}
			for i := range drivers {
				if strings.HasPrefix(f.Summary, fmt.Sprintf("node %q: image ", fmt.Sprintf("n%d", i))) {
					ref := strings.Fields(strings.TrimPrefix(f.Summary, fmt.Sprintf("node %q: image ", fmt.Sprintf("n%d", i))))[0]
					key := fmt.Sprintf("%d|%s", i, ref)
					if _, dup := got[key]; dup {
						t.Errorf("%s: two findings for %s on %s", gpu, ref, drivers[i])
					}
					got[key] = f.Severity
				}
			}
		}
		planned := planImageVerdicts(t, cfg, len(drivers))
		verified := verifyImageVerdicts(t, cfg, gpu, drivers)
		for i, d := range drivers {
			for _, im := range images {
				ans := kbase.ImageDriver(im, d, class)
				key := fmt.Sprintf("%d|%s", i, im.Image)
				if got, want := planned[key], ans.Verdict; got != want {
					t.Errorf("%s on %s (%q): plan says %s, compat says %s", im.Image, d, gpu, got, want)
				}
				if got, want := verified[key], ans.Verdict; got != want {
					t.Errorf("%s on %s (%q): verify says %s, compat says %s", im.Image, d, gpu, got, want)
				}
				checked++
				if ans.Verdict == kb.VerdictError {
					errs++
					if !ans.Fact.Status.CanBeError() {
						t.Errorf("%s on %s (%s): error on a %s fact", im.Image, d, class, ans.Fact.Status)
					}
				}
				if class == kb.GPUClassDatacenter && !im.ExceptionsKnown && ans.Verdict == kb.VerdictError {
					t.Errorf("%s on %s (%s): error although the exception list is unknown", im.Image, d, gpu)
				}
				sev, found := got[fmt.Sprintf("%d|%s", i, im.Image)]
				switch {
				case ans.Verdict == kb.VerdictNone && found:
					t.Errorf("%s on %s (%q): rule reports %s, compat says nothing", im.Image, d, gpu, sev)
				case ans.Verdict != kb.VerdictNone && !found:
					t.Errorf("%s on %s (%q): rule silent, compat says %s", im.Image, d, gpu, ans.Verdict)
				case found && sev != verdictSeverity(ans.Verdict):
					t.Errorf("%s on %s (%q): rule says %s, compat says %s", im.Image, d, gpu, sev, ans.Verdict)
				}
			}
		}
	}
	t.Logf("%d combinations (%d images × %d drivers × %d GPUs), %d errors", checked, len(images), len(drivers), len(gpus), errs)
	if errs == 0 {
		t.Error("no combination is an error: the walk does not reach the error path")
	}
}

// planImageVerdicts plans every node of cfg on an Ubuntu host without the
// driver, whose PCI bus shows GPUs the knowledge base cannot name (so the
// GPU's class comes from the node's hardware block, as in lint), and
// returns plan's image verdicts by "node index|image".
func planImageVerdicts(t *testing.T, cfg *spec.Config, nodes int) map[string]kb.Verdict {
	t.Helper()
	f := &facts.Node{OS: facts.OS{ID: "ubuntu", VersionID: "24.04"}, Arch: "x86_64"}
	for i := 0; i < 8; i++ {
		f.PCI = append(f.PCI, facts.PCIDevice{Address: fmt.Sprintf("0000:%02x:00.0", 0x10+i), Kind: facts.KindGPU,
			Vendor: facts.VendorNVIDIA, Device: "0xffff", Class: "0x030200", NUMANode: -1})
	}
	var probed []target.Probed
	for _, n := range cfg.Nodes {
		probed = append(probed, target.Probed{Host: target.Host{Host: n.Hosts[0], Node: n}, Facts: f})
	}
	p := plan.Make(testKB, probed)
	if len(p.Hosts) != nodes {
		t.Fatalf("plan has %d hosts, want %d", len(p.Hosts), nodes)
	}
	out := map[string]kb.Verdict{}
	for i, h := range p.Hosts {
		if h.Error != "" {
			t.Fatalf("host %s: %s", h.Host, h.Error)
		}
		for _, v := range h.Images {
			if v.DriverFrom != plan.DriverPlanned {
				t.Errorf("host %s: %s judged the %s driver, not the planned one", h.Host, v.Image, v.DriverFrom)
			}
			key := fmt.Sprintf("%d|%s", i, v.Image)
			if _, dup := out[key]; dup {
				t.Errorf("host %s: two verdicts for %s", h.Host, v.Image)
			}
			out[key] = kb.VerdictWarning
			if v.Severity == plan.ImageError {
				out[key] = kb.VerdictError
			}
		}
	}
	return out
}

// verifyImageVerdicts runs verify's checks on every node of cfg with the
// node's driver loaded and one GPU named as the node's hardware block says
// (none without one), and returns container.image_driver's verdicts by
// "node index|image": a failure is an error, a pass with a reason a
// warning.
func verifyImageVerdicts(t *testing.T, cfg *spec.Config, gpu string, drivers []kb.Version) map[string]kb.Verdict {
	t.Helper()
	out := map[string]kb.Verdict{}
	for i, n := range cfg.Nodes {
		rep := &nvmlfacts.Report{DriverVersion: drivers[i].String()}
		if gpu != "" {
			rep.GPUs = []nvmlfacts.GPU{{Index: 0, Name: gpu}}
		}
		exp := verify.ExpectationFor(n)
		exp.KB = testKB
		for _, r := range verify.Check(exp, rep, verify.HostFacts{}) {
			image, ok := strings.CutPrefix(r.ID, string(verify.CheckImageDriver)+".")
			if !ok {
				continue
			}
			key := fmt.Sprintf("%d|%s", i, image)
			switch {
			case r.Status == verify.StatusFail:
				out[key] = kb.VerdictError
			case r.Status == verify.StatusPass && r.Message != "":
				out[key] = kb.VerdictWarning
			case r.Status != verify.StatusPass:
				t.Errorf("node %s: %s is %s: %s", n.Name, r.ID, r.Status, r.Message)
			}
		}
	}
	return out
}

// agreementDrivers lists the drivers the tables name, plus one release just
// below each forward-compatibility exception.
func agreementDrivers(t *testing.T, kbase *kb.KB) []kb.Version {
	seen := map[string]kb.Version{}
	add := func(s string) {
		v, err := kb.ParseDriverVersion(s)
		if err != nil {
			t.Fatalf("driver %q: %v", s, err)
		}
		seen[v.String()] = v
	}
	for _, im := range kbase.NGCImages() {
		for _, e := range im.DatacenterExceptions {
			add(e.Driver.String())
			if e.Driver.Minor() > 0 {
				add(fmt.Sprintf("%d.%d", e.Driver.Major(), e.Driver.Minor()-1))
			}
		}
		if im.MinDriverBranch > 0 {
			add(fmt.Sprint(im.MinDriverBranch))
		}
	}
	for _, r := range kbase.CUDAReleases() {
		if r.MinDriver.Driver.IsExact() {
			add(r.MinDriver.Driver.String())
		}
	}
	for _, b := range kbase.Branches() {
		add(fmt.Sprint(b.Number))
	}
	out := make([]kb.Version, 0, len(seen))
	for _, v := range seen {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Compare(out[j]) < 0 })
	return out
}
