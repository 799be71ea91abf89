package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// planImagesSpec runs NGC images on sim://hgx-h100-stale (8 H100s, driver
// 535.183.06 loaded). driver is the node's driver block, "" for none.
func planImagesSpec(t *testing.T, driver string) string {
	t.Helper()
	dir := t.TempDir()
	src := `module "hgx" {
  source = "gpuform/hgx-h100-8gpu"
}

node "infer" {
  hosts    = ["sim://hgx-h100-stale"]
  hardware = module.hgx.hardware
` + driver + `
  container {
    images = [
      "nvcr.io/nvidia/tritonserver:24.05-py3",
      "nvcr.io/nvidia/tritonserver:24.08-py3",
      "docker.io/library/ubuntu:24.04",
    ]
  }
}
`
	if err := os.WriteFile(filepath.Join(dir, "main.gpuform.hcl"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestPlanJudgesImages: plan gives each container image the knowledge
// base's verdict against the driver the host runs after apply, on the GPUs
// its PCI bus shows, and says the same as lint's container_image_driver
// about the pinned driver: Triton 24.05 (R545, data-center exceptions for
// R470, R525, R535) cannot run on R530 on an H100; Triton 24.08 (R560)
// only may not, as part of its exception list is unconfirmed; Ubuntu is
// not judged.
func TestPlanJudgesImages(t *testing.T) {
	t.Parallel()
	env := []string{"GPUFORM_SIM_STATE=" + t.TempDir()}
	dir := planImagesSpec(t, `  driver { version = "530.30.02" }`)

	code, out, errOut := runPA(t, env, "", "plan", dir)
	if code != ExitOK {
		t.Fatalf("plan: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{
		"Error: image nvcr.io/nvidia/tritonserver:24.05-py3 needs driver R545 or later (NVIDIA's release notes); the planned driver 530.30.02 is older",
		"Warning: image nvcr.io/nvidia/tritonserver:24.08-py3 needs driver R560 or later",
		"[H100 SXM5 80GB (HGX/DGX H100), data-center GPU]",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("plan text lacks %q\n%s", want, out)
		}
	}
	// The image pull step may name it; no driver verdict may.
	if strings.Contains(out, "Error: image docker.io/library/ubuntu:24.04") || strings.Contains(out, "Warning: image docker.io/library/ubuntu:24.04") {
		t.Errorf("plan judged an image the knowledge base does not know\n%s", out)
	}

	code, out, errOut = runPA(t, env, "", "plan", "-json", dir)
	var doc struct {
		Hosts []struct {
			Images []struct {
				Image, Severity, Driver, GPUClass, Message, Source string
				DriverFrom                                         string `json:"driver_from"`
			} `json:"images"`
		} `json:"hosts"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != ExitOK || len(doc.Hosts) != 1 {
		t.Fatalf("plan -json: exit %d, %v\n%s\n%s", code, err, out, errOut)
	}
	planned := map[string]string{}
	for _, im := range doc.Hosts[0].Images {
		planned[im.Image] = im.Severity
		if im.Driver != "530.30.02" || im.DriverFrom != "planned" || im.Source == "" || im.Message == "" {
			t.Errorf("plan -json image %+v: want the planned driver 530.30.02, a message and a source", im)
		}
	}

	// lint judges the same driver, pinned in the spec, the same way.
	code, out, _ = runPA(t, env, "", "lint", "-json", dir)
	var lintDoc struct {
		Diagnostics []struct{ Severity, Summary, Rule string } `json:"diagnostics"`
	}
	if err := json.Unmarshal([]byte(out), &lintDoc); err != nil {
		t.Fatalf("lint -json: exit %d, %v\n%s", code, err, out)
	}
	linted := map[string]string{}
	for _, d := range lintDoc.Diagnostics {
		if d.Rule != "container_image_driver" {
			continue
		}
		for _, f := range strings.Fields(d.Summary) {
			if strings.HasPrefix(f, "nvcr.io/") {
				linted[f] = d.Severity
			}
		}
	}
	want := map[string]string{"nvcr.io/nvidia/tritonserver:24.05-py3": "error", "nvcr.io/nvidia/tritonserver:24.08-py3": "warning"}
	for img, sev := range want {
		if planned[img] != sev || linted[img] != sev {
			t.Errorf("%s: plan says %q, lint says %q, want %q", img, planned[img], linted[img], sev)
		}
	}
	if len(planned) != len(want) || len(linted) != len(want) {
		t.Errorf("plan judged %v, lint %v; want %v", planned, linted, want)
	}
}

// TestPlanJudgesImagesOnLoadedDriver: a node that pins no driver keeps the
// one the host runs, and plan judges the images against it.
func TestPlanJudgesImagesOnLoadedDriver(t *testing.T) {
	t.Parallel()
	env := []string{"GPUFORM_SIM_STATE=" + t.TempDir()}
	dir := planImagesSpec(t, "")
	code, out, errOut := runPA(t, env, "", "plan", dir)
	if code != ExitOK {
		t.Fatalf("plan: exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "Warning: image nvcr.io/nvidia/tritonserver:24.08-py3 needs driver R560 or later (NVIDIA's release notes); the loaded driver 535.183.06 is older") {
		t.Errorf("plan text does not judge the loaded driver\n%s", out)
	}
	if strings.Contains(out, "image nvcr.io/nvidia/tritonserver:24.05-py3 needs") {
		t.Errorf("Triton 24.05 runs on 535.183.06 (a data-center exception), yet plan judged it\n%s", out)
	}
}
