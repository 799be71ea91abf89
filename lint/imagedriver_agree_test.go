package lint

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/lint/compat"
)

// TestImageDriverAgreement walks every NGC image of the knowledge base, on
// every driver the tables name (each forward-compatibility exception, a
// release just below it, each CUDA toolkit driver, each branch floor), on
// every GPU model and on a node without hardware, and checks that
// container_image_driver reports exactly what compat.ImageDriver decides:
// nothing, a warning or an error. It also checks the decision itself
// honours the status of its facts: no error on a weak fact, none on a
// data-center GPU whose exception list is unknown.
func TestImageDriverAgreement(t *testing.T) {
	kb := compat.Default()
	images := kb.NGCImages()
	drivers := agreementDrivers(t, kb)
	gpus := []string{""} // no hardware: class unknown
	for _, g := range kb.GPUModels() {
		gpus = append(gpus, g.Name)
	}
	checked, errs := 0, 0
	for _, gpu := range gpus {
		class := compat.GPUClassUnknown
		if gpu != "" {
			class, _ = kb.GPUClassOf(gpu)
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
		res, diags := Run(cfg, Options{Now: testNow, MinSeverity: Info})
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
		for i, d := range drivers {
			for _, im := range images {
				ans := kb.ImageDriver(im, d, class)
				checked++
				if ans.Verdict == compat.VerdictError {
					errs++
					if !ans.Fact.Status.CanBeError() {
						t.Errorf("%s on %s (%s): error on a %s fact", im.Image, d, class, ans.Fact.Status)
					}
				}
				if class == compat.GPUClassDatacenter && !im.ExceptionsKnown && ans.Verdict == compat.VerdictError {
					t.Errorf("%s on %s (%s): error although the exception list is unknown", im.Image, d, gpu)
				}
				sev, found := got[fmt.Sprintf("%d|%s", i, im.Image)]
				switch {
				case ans.Verdict == compat.VerdictNone && found:
					t.Errorf("%s on %s (%q): rule reports %s, compat says nothing", im.Image, d, gpu, sev)
				case ans.Verdict != compat.VerdictNone && !found:
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

// agreementDrivers lists the drivers the tables name, plus one release just
// below each forward-compatibility exception.
func agreementDrivers(t *testing.T, kb *compat.KB) []compat.Version {
	seen := map[string]compat.Version{}
	add := func(s string) {
		v, err := compat.ParseDriverVersion(s)
		if err != nil {
			t.Fatalf("driver %q: %v", s, err)
		}
		seen[v.String()] = v
	}
	for _, im := range kb.NGCImages() {
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
	for _, r := range kb.CUDAReleases() {
		if r.MinDriver.Driver.IsExact() {
			add(r.MinDriver.Driver.String())
		}
	}
	for _, b := range kb.Branches() {
		add(fmt.Sprint(b.Number))
	}
	out := make([]compat.Version, 0, len(seen))
	for _, v := range seen {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Compare(out[j]) < 0 })
	return out
}
