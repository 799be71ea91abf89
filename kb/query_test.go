package kb

import (
	"strings"
	"testing"
	"time"

	"github.com/gpuform/gpuform/spec"
)

func TestCUDAMinDriver(t *testing.T) {
	kb := mustKB(t)
	tests := []struct {
		name       string
		cuda       string
		wantOK     bool
		wantDriver string
		wantStatus Status
	}{
		{name: "exact update", cuda: "12.4.1", wantOK: true, wantDriver: "550.54.15", wantStatus: Confirmed},
		// A floating minor answers with its first release, the lowest floor.
		{name: "floating minor", cuda: "12.4", wantOK: true, wantDriver: "550.54.14", wantStatus: Confirmed},
		// NGC writes CUDA with a build number.
		{name: "four components", cuda: "12.5.0.23", wantOK: true, wantDriver: "555.42.02", wantStatus: Confirmed},
		{name: "two-part driver", cuda: "12.8.0", wantOK: true, wantDriver: "570.26", wantStatus: Confirmed},
		// 13.3's driver comes from NVIDIA's runfile name, not Table 3:
		// known, but not error-grade.
		{name: "secondary value", cuda: "13.3.0", wantOK: true, wantDriver: "610.43.02", wantStatus: Secondary},
		{name: "added release", cuda: "12.3.2", wantOK: true, wantDriver: "545.23.08", wantStatus: Secondary},
		// 13.4 is in the table without a driver value.
		{name: "release without value", cuda: "13.4.1", wantOK: false, wantStatus: StatusUnknown},
		{name: "newer than the table", cuda: "13.5.0", wantOK: false},
		// There never was a CUDA 12.7 toolkit.
		{name: "no such minor", cuda: "12.7", wantOK: false},
		{name: "unknown update", cuda: "12.4.9", wantOK: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, ok := kb.CUDAMinDriver(ver(t, tt.cuda))
			if ok != tt.wantOK || m.Driver.String() != tt.wantDriver || m.Status != tt.wantStatus {
				t.Errorf("CUDAMinDriver(%s) = %s/%s ok=%v, want %s/%s ok=%v",
					tt.cuda, m.Driver, m.Status, ok, tt.wantDriver, tt.wantStatus, tt.wantOK)
			}
			if ok && m.Source() == "" {
				t.Errorf("CUDAMinDriver(%s) has no source", tt.cuda)
			}
		})
	}
}

func TestCUDAMinDriverMVC(t *testing.T) {
	kb := mustKB(t)
	for _, tt := range []struct {
		cuda, want string
		ok         bool
	}{{"12.8.1", "525", true}, {"13.2", "580", true}, {"11.8.0", "450", true}, {"14.0", "", false}} {
		t.Run(tt.cuda, func(t *testing.T) {
			m, ok := kb.CUDAMinDriverMVC(ver(t, tt.cuda))
			if ok != tt.ok || m.Driver.String() != tt.want {
				t.Errorf("CUDAMinDriverMVC(%s) = %s ok=%v, want %s ok=%v", tt.cuda, m.Driver, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestDriverMinimumCheck(t *testing.T) {
	tests := []struct {
		name, min, driver string
		want              Tri
	}{
		{"newer release", "550.54.15", "550.127.08", Yes},
		{"older release", "550.54.15", "550.54.14", No},
		{"newer branch", "550.54.15", "555", Yes},
		{"older branch", "550.54.15", "535.183.06", No},
		// A floating branch may install any release of R550.
		{"floating same branch", "550.54.15", "550", Unknown},
		{"branch floor", "525", "525.60.13", Yes},
		{"branch floor, floating", "525", "525", Yes},
		{"below branch floor", "525", "520.61.05", No},
		{"two-part releases", "570.26", "570.124.06", Yes},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := DriverMinimum{Driver: drv(t, tt.min)}
			if got := m.Check(drv(t, tt.driver)); got != tt.want {
				t.Errorf("min %s, driver %s: %s, want %s", tt.min, tt.driver, got, tt.want)
			}
		})
	}
	if got := (DriverMinimum{}).Check(drv(t, "550")); got != Unknown {
		t.Errorf("no minimum: %s, want unknown", got)
	}
}

func TestDriverBranchAndEOL(t *testing.T) {
	kb := mustKB(t)
	day := func(s string) time.Time {
		d, err := time.Parse("2006-01-02", s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	tests := []struct {
		name       string
		driver     string
		asOf       string
		wantType   BranchType
		wantTypeSt Status
		wantEOL    Tri
		wantEOLSt  Status
	}{
		// NVIDIA gives months: R535 is supported through June 2026.
		{"R535 last supported day", "535.183.06", "2026-06-30", LongTermSupportBranch, Confirmed, No, Confirmed},
		{"R535 first unsupported day", "535.183.06", "2026-07-01", LongTermSupportBranch, Confirmed, Yes, Confirmed},
		// Listed as end of life without a date.
		{"R550 ended", "550.127.08", "2024-01-01", ProductionBranch, Secondary, Yes, Confirmed},
		// Pages disagree (August vs June 2028); the earlier date wins.
		{"R580 conflicting dates", "580", "2028-07-01", LongTermSupportBranch, Confirmed, Yes, Confirmed},
		{"R580 before", "580.95.05", "2028-06-30", LongTermSupportBranch, Confirmed, No, Confirmed},
		// Ended per NVIDIA's supported-drivers page ("all previous driver
		// branches not listed ... are end of life"); once only the forum.
		{"R470 ended", "470.57.02", "2030-01-01", LongTermSupportBranch, Secondary, Yes, Confirmed},
		// NVIDIA's Unix driver archive names 590.48.01 its latest New
		// Feature Branch release; no end-of-life date is published.
		{"R590 new feature branch", "590.48.01", "2030-01-01", NewFeatureBranch, Confirmed, Unknown, StatusUnknown},
		// New feature branches have no end-of-life date.
		{"R520 unknown", "520.61.05", "2030-01-01", NewFeatureBranch, Secondary, Unknown, StatusUnknown},
		// Evaluation branches have no support lifecycle.
		{"R455 not applicable", "455.23", "2030-01-01", EvaluationBranch, Confirmed, No, Confirmed},
		{"R545 undesignated", "545.23.08", "2020-01-01", BranchTypeUnknown, StatusUnknown, Unknown, StatusUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, ok := kb.DriverBranch(drv(t, tt.driver))
			if !ok {
				t.Fatalf("DriverBranch(%s) not found", tt.driver)
			}
			if b.Type != tt.wantType || b.TypeFact.Status != tt.wantTypeSt {
				t.Errorf("type %s/%s, want %s/%s", b.Type, b.TypeFact.Status, tt.wantType, tt.wantTypeSt)
			}
			eol, f := b.IsEOL(day(tt.asOf))
			if eol != tt.wantEOL || f.Status != tt.wantEOLSt {
				t.Errorf("IsEOL(%s) = %s/%s, want %s/%s", tt.asOf, eol, f.Status, tt.wantEOL, tt.wantEOLSt)
			}
		})
	}
	for _, d := range []string{"600.10", "999", "R616"} {
		if _, ok := kb.DriverBranch(drv(t, d)); ok {
			t.Errorf("DriverBranch(%s) found, want not in the knowledge base", d)
		}
	}
}

func TestGPULookup(t *testing.T) {
	kb := mustKB(t)
	tests := []struct {
		name      string
		wantModel string
	}{
		{"H100-SXM5-80GB", "H100 SXM5 80GB (HGX/DGX H100)"},
		{"NVIDIA H100 80GB HBM3", "H100 SXM5 80GB (HGX/DGX H100)"},
		{"h100_sxm5_80gb", "H100 SXM5 80GB (HGX/DGX H100)"},
		{"HGX H100", "H100 SXM5 80GB (HGX/DGX H100)"},
		{"H100 NVL", "H100 NVL"},
		{"NVIDIA A100-SXM4-40GB", "A100 SXM4 40GB (HGX/DGX A100)"},
		{"NVIDIA B200 180GB HBM3e", "B200 (HGX/DGX B200)"},
		{"B200", "B200 (HGX/DGX B200)"},
		{"Tesla V100-SXM2-32GB", "V100"},
		{"NVIDIA L40S", "L40S"},
		{"NVIDIA RTX 6000 Ada Generation", "RTX 6000 Ada Generation"},
		{"GH200", "GH200 Grace Hopper Superchip"},
		// Family names cover several parts and are not a unique model.
		{"H100", ""},
		{"A100 80GB", ""},
		{"H800", ""},
		{"", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, ok := kb.GPU(tt.name)
			if ok != (tt.wantModel != "") || g.Name != tt.wantModel {
				t.Errorf("GPU(%q) = %q ok=%v, want %q", tt.name, g.Name, ok, tt.wantModel)
			}
		})
	}
	if c := kb.GPUCandidates("H100"); len(c) != 3 {
		t.Errorf("GPUCandidates(H100) = %d models, want SXM, PCIe and NVL", len(c))
	}
	if a, ok := kb.GPUArchitecture("H100"); !ok || a.Name != "Hopper" {
		t.Errorf("GPUArchitecture(H100) = %q ok=%v, want Hopper", a.Name, ok)
	}
	if _, ok := kb.GPUArchitecture("H800"); ok {
		t.Error("GPUArchitecture(H800) found")
	}
}

func TestGPUFacts(t *testing.T) {
	kb := mustKB(t)
	get := func(name string) GPUModel {
		g, ok := kb.GPU(name)
		if !ok {
			t.Fatalf("GPU(%q) not found", name)
		}
		return g
	}
	h := get("H100 SXM5")
	if h.NVLinkGBps != 900 || h.NVLinkFact.Status != Confirmed {
		t.Errorf("H100 SXM NVLink %v/%s, want 900/confirmed", h.NVLinkGBps, h.NVLinkFact.Status)
	}
	if h.NVSwitch != Yes || h.FabricManager != Yes || !h.FabricManagerFact.Status.CanBeError() {
		t.Errorf("H100 SXM NVSwitch %s, FM %s/%s, want yes, yes/error-grade", h.NVSwitch, h.FabricManager, h.FabricManagerFact.Status)
	}
	if h.MinCUDA.String() != "11.8" || h.MinDriver.Driver.String() != "520.61.05" || h.MinDriver.Status != Derived {
		t.Errorf("H100 SXM min CUDA %s driver %s/%s", h.MinCUDA, h.MinDriver.Driver, h.MinDriver.Status)
	}
	if p := get("H100 PCIe"); p.NVSwitch != No || p.FabricManager != No {
		t.Errorf("H100 PCIe NVSwitch %s FM %s, want no/no", p.NVSwitch, p.FabricManager)
	}

	// Blackwell needs the open modules: NVIDIA's R560 post says the
	// proprietary drivers are unsupported on Grace Hopper and Blackwell.
	b := get("B200")
	if b.KernelModules.Supports("proprietary") != No || b.KernelModulesFact.Status != Confirmed {
		t.Errorf("B200 proprietary: %s/%s, want no/confirmed", b.KernelModules.Supports("proprietary"), b.KernelModulesFact.Status)
	}
	// NVIDIA's own MLPerf B200 system ran Driver 565: no release of R565
	// may be refused, and what came before it is not known.
	if b.MinDriver.Check(drv(t, "565.57.01")) != Yes || b.MinDriver.Status.CanBeError() {
		t.Errorf("B200 min driver %s/%s: 565.57.01 must pass, and nothing below may fail a build", b.MinDriver.Driver, b.MinDriver.Status)
	}
	if b.NVLinkGBps != 1800 {
		t.Errorf("B200 NVLink %v GB/s, want 1800 (1.8 TB/s)", b.NVLinkGBps)
	}
	// GH200's requirement is confirmed by the GPU Operator docs.
	gh := get("GH200")
	if gh.KernelModules.Supports("proprietary") != No || gh.KernelModulesFact.Status != Confirmed {
		t.Errorf("GH200 proprietary: %s/%s, want no/confirmed", gh.KernelModules.Supports("proprietary"), gh.KernelModulesFact.Status)
	}
	v := get("V100")
	if v.KernelModules.Supports("open") != No || v.KernelModules.Supports("proprietary") != Yes {
		t.Errorf("V100 open %s proprietary %s", v.KernelModules.Supports("open"), v.KernelModules.Supports("proprietary"))
	}
	if a, ok := kb.ArchitectureOf(v.ComputeCapability); !ok || a.LastDriverBranch != 580 || a.LastCUDAMajor != 12 {
		t.Errorf("Volta last driver R%d last CUDA %d, want R580 and 12", a.LastDriverBranch, a.LastCUDAMajor)
	}
	// Each field cites the page it comes from, not the row's first URL.
	for _, tt := range []struct {
		field string
		f     Fact
		want  string
	}{
		{"H100 NVSwitch", h.NVSwitchFact, "nvswitch.html"},
		{"H100 Fabric Manager", h.FabricManagerFact, "fabric-manager-user-guide"},
		{"H100 NVLink", h.NVLinkFact, "mlcommons"},
		{"H100 CC", h.CCFact, "developer.nvidia.com/cuda-gpus"},
		{"V100 kernel modules", v.KernelModulesFact, "kernel-modules.html"},
		{"GH200 kernel modules", gh.KernelModulesFact, "platform-support"},
		{"B200 kernel modules", b.KernelModulesFact, "developer.nvidia.com/blog/nvidia-transitions-fully-towards-open-source-gpu-kernel-modules"},
		{"GB300 kernel modules", get("GB300").KernelModulesFact, "developer.nvidia.com/blog/nvidia-transitions-fully-towards-open-source-gpu-kernel-modules"},
		{"B200 min driver", b.MinDriver.Fact, "mlcommons/inference_results_v4.1/blob/a2f5d66d17e8f75c02fd74dfe810ecca6a046696/closed/NVIDIA/systems/B200-SXM-180GBx1_TRT.json"},
		{"RTX PRO min driver", get("RTX PRO 6000 Blackwell").MinDriver.Fact, "platform-support"},
	} {
		if !strings.Contains(tt.f.Source(), tt.want) {
			t.Errorf("%s cites %q, want a %s page", tt.field, tt.f.Source(), tt.want)
		}
	}
	if get("L40S").KernelModules.Supports("vfio") != Unknown {
		t.Error("unknown flavour answered")
	}
}

func TestNCCLBuilds(t *testing.T) {
	kb := mustKB(t)
	tests := []struct {
		name, nccl, cuda string
		usable           bool
		wantOK           bool
		want             Tri
		wantBuild        string
		wantStatus       Status
	}{
		{name: "exact build", nccl: "2.21.5", cuda: "12.4", wantOK: true, want: Yes, wantBuild: "12.4", wantStatus: Confirmed},
		// One apt repository had no +cuda13.1 build of 2.28.9
		// (rapidsai/devcontainers#644), but issue 12 reports one in NVIDIA's
		// indexes: the list is not complete, so the build is unknown.
		{name: "missing exact build", nccl: "2.28.9", cuda: "13.1.0", wantOK: true, want: Unknown, wantStatus: Unconfirmed},
		{name: "only two builds", nccl: "2.30.7", cuda: "13.2", wantOK: true, want: No, wantStatus: Confirmed},
		{name: "incomplete list", nccl: "2.21.5", cuda: "12.3", wantOK: true, want: Unknown, wantStatus: Unconfirmed},
		{name: "lead only", nccl: "2.25.1", cuda: "12.4", wantOK: true, want: Yes, wantBuild: "12.4", wantStatus: Unconfirmed},
		{name: "unknown release", nccl: "2.99.1", cuda: "12.4", wantOK: false},
		// The CUDA 13.0 build runs under CUDA 13.1 (minor version
		// compatibility), as NGC PyTorch 25.12 ships it.
		{name: "usable older minor", nccl: "2.28.9", cuda: "13.1.0", usable: true, wantOK: true, want: Yes, wantBuild: "13.0", wantStatus: Confirmed},
		// Builds exist for 12.9 and 13.3, neither runs under 13.2.
		{name: "usable none", nccl: "2.30.7", cuda: "13.2", usable: true, wantOK: true, want: No, wantStatus: Confirmed},
		{name: "usable exact", nccl: "2.22.3", cuda: "12.6.2", usable: true, wantOK: true, want: Yes, wantBuild: "12.6", wantStatus: Confirmed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := kb.NCCLBuildFor
			if tt.usable {
				q = kb.NCCLUsableBuild
			}
			a, ok := q(ver(t, tt.nccl), ver(t, tt.cuda))
			if ok != tt.wantOK || a.Available != tt.want || a.Build.CUDA.String() != tt.wantBuild || a.Status != tt.wantStatus {
				t.Errorf("got %s build %q %s ok=%v, want %s build %q %s ok=%v",
					a.Available, a.Build.CUDA, a.Status, ok, tt.want, tt.wantBuild, tt.wantStatus, tt.wantOK)
			}
		})
	}
}

func TestParseNCCLPackageVersion(t *testing.T) {
	for _, tt := range []struct{ in, nccl, cuda string }{
		{"2.21.5-1+cuda12.4", "2.21.5", "12.4"},
		{"2.21.5", "2.21.5", ""},
		{"2.30.7-1+cuda13.3", "2.30.7", "13.3"},
	} {
		n, c, err := ParseNCCLPackageVersion(tt.in)
		if err != nil || n.String() != tt.nccl || c.String() != tt.cuda {
			t.Errorf("ParseNCCLPackageVersion(%q) = %s, %s, %v", tt.in, n, c, err)
		}
	}
	for _, bad := range []string{"", "x-1+cuda12.4", "2.21.5-1+cudaX"} {
		if _, _, err := ParseNCCLPackageVersion(bad); err == nil {
			t.Errorf("ParseNCCLPackageVersion(%q) succeeded", bad)
		}
	}
}

func FuzzParseNCCLPackageVersion(f *testing.F) {
	for _, s := range []string{"2.21.5-1+cuda12.4", "2.21.5", "2.30.7-1+cuda13.3", "+cuda", "-"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, c, err := ParseNCCLPackageVersion(s)
		if err != nil {
			return
		}
		if n.IsZero() {
			t.Fatalf("%q: no NCCL version and no error", s)
		}
		if !c.IsZero() && c.Len() > maxVersionParts {
			t.Fatalf("%q: CUDA %s", s, c)
		}
	})
}

func TestNGCImage(t *testing.T) {
	kb := mustKB(t)
	img, ok := kb.NGCImage("nvcr.io/nvidia/pytorch:24.05-py3")
	if !ok {
		t.Fatal("pytorch:24.05-py3 not found")
	}
	if img.CUDA.String() != "12.4.1" || img.NCCL.String() != "2.21.5" || img.MinDriverBranch != 545 {
		t.Errorf("24.05: CUDA %s NCCL %s branch %d", img.CUDA, img.NCCL, img.MinDriverBranch)
	}
	if _, ok := kb.NGCImage("NVCR.IO/nvidia/pytorch:24.05-py3@sha256:0123abcd"); !ok {
		t.Error("digest and case not ignored")
	}
	tests := []struct {
		name       string
		driver     string
		datacenter bool
		want       Tri
	}{
		{"branch at minimum", "545.23.08", false, Yes},
		{"newer branch", "550.127.08", false, Yes},
		{"older branch, workstation", "535.183.06", false, No},
		// Data-center GPUs run it on R535 from 535.86 through forward
		// compatibility.
		{"forward-compat exception", "535.104.05", true, Yes},
		{"below the exception", "535.54.03", true, No},
		{"floating within exception branch", "535", true, Unknown},
		{"no exception for the branch", "530.30.02", true, No},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, f := img.DriverCheck(drv(t, tt.driver), tt.datacenter)
			if got != tt.want {
				t.Errorf("DriverCheck(%s, %v) = %s (%s), want %s", tt.driver, tt.datacenter, got, f.Status, tt.want)
			}
			// 24.05's branch and exceptions are unconfirmed: never an error.
			if got == No && f.Status.CanBeError() {
				t.Errorf("DriverCheck(%s) = no on %s data", tt.driver, f.Status)
			}
		})
	}
	// 23.10 lists no exceptions: a data-center driver below R535 may still
	// run it, so the answer must not be No.
	old, _ := kb.NGCImage("nvcr.io/nvidia/pytorch:23.10-py3")
	if got, _ := old.DriverCheck(drv(t, "525.85.12"), true); got != Unknown {
		t.Errorf("23.10 on data-center R525: %s, want unknown", got)
	}
	if got, f := old.DriverCheck(drv(t, "525.85.12"), false); got != No || f.Status != Derived {
		t.Errorf("23.10 on workstation R525: %s/%s, want no/derived", got, f.Status)
	}
	for _, ref := range []string{"nvcr.io/nvidia/pytorch:99.01-py3", "nvcr.io/nvidia/tensorflow:24.05-tf2-py3", "nvcr.io/nvidia/tritonserver:24.07-trtllm-python-py3"} {
		if _, ok := kb.NGCImage(ref); ok {
			t.Errorf("NGCImage(%s) found", ref)
		}
		if !IsNGCImage(ref) {
			t.Errorf("IsNGCImage(%s) = false", ref)
		}
	}
	if IsNGCImage("docker.io/pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime") {
		t.Error("Docker Hub image taken for NGC")
	}
}

func TestTritonImages(t *testing.T) {
	kb := mustKB(t)
	get := func(ref string) NGCImage {
		img, ok := kb.NGCImage(ref)
		if !ok {
			t.Fatalf("%s not found", ref)
		}
		return img
	}
	dc, other, unknown := GPUClassDatacenter, GPUClassOther, GPUClassUnknown
	tests := []struct {
		name       string
		ref        string
		driver     string
		class      GPUClass
		want       Verdict
		wantStatus Status
	}{
		{"release notes minimum", "nvcr.io/nvidia/tritonserver:23.05-py3", "530.30.02", other, VerdictNone, Confirmed},
		{"below minimum, no forward compatibility", "nvcr.io/nvidia/tritonserver:23.05-py3", "525.85.12", other, VerdictError, Confirmed},
		{"forward-compat exception", "nvcr.io/nvidia/tritonserver:23.05-py3", "525.85.12", dc, VerdictNone, Confirmed},
		{"exception holds only on data-center GPUs", "nvcr.io/nvidia/tritonserver:23.05-py3", "525.85.12", unknown, VerdictWarning, Confirmed},
		{"below the exception within its branch", "nvcr.io/nvidia/tritonserver:23.05-py3", "525.60.13", dc, VerdictError, Confirmed},
		{"branch without an exception", "nvcr.io/nvidia/tritonserver:23.05-py3", "520.61.05", dc, VerdictError, Confirmed},
		// The page says 575 for CUDA 13; CUDA 13's MVC floor R580 wins where
		// forward compatibility cannot help.
		{"CUDA 13 floor over the page", "nvcr.io/nvidia/tritonserver:25.10-py3", "575.57.08", other, VerdictError, Confirmed},
		// On a data-center GPU only the (unconfirmed) exception list could
		// carry it: a warning, as for every older driver (issue: R575 error,
		// R570 warning, R535 nothing).
		{"CUDA 13 floor, data-center R575", "nvcr.io/nvidia/tritonserver:25.08-py3", "575.57.08", dc, VerdictWarning, Unconfirmed},
		{"CUDA 13 floor, data-center R570", "nvcr.io/nvidia/tritonserver:25.08-py3", "570.172.08", dc, VerdictWarning, Unconfirmed},
		{"CUDA 13 floor, data-center R535", "nvcr.io/nvidia/tritonserver:25.08-py3", "535.261.03", dc, VerdictWarning, Unconfirmed},
		{"CUDA 13 floor met", "nvcr.io/nvidia/tritonserver:25.10-py3", "580.95.05", other, VerdictNone, Unconfirmed},
		// The exception list contradicts its own page for CUDA 12.6: never
		// error-grade, and never silent either.
		{"contradicted exception", "nvcr.io/nvidia/tritonserver:24.10-py3", "545.23.08", dc, VerdictWarning, Unconfirmed},
		{"no minimum named", "nvcr.io/nvidia/tritonserver:26.08-py3", "610.43.02", other, VerdictNone, StatusUnknown},
		// The case: an unknown exception list (PyTorch 23.10) may not
		// carry an error on a data-center GPU; NVIDIA's CUDA 12.2 containers
		// list 525.85+.
		{"unknown exceptions on a data-center GPU", "nvcr.io/nvidia/pytorch:23.10-py3", "525.147.05", dc, VerdictWarning, Unconfirmed},
		{"unknown exceptions, no forward compatibility", "nvcr.io/nvidia/pytorch:23.10-py3", "525.147.05", other, VerdictError, Derived},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ans := kb.ImageDriver(get(tt.ref), drv(t, tt.driver), tt.class)
			if ans.Verdict != tt.want || ans.Fact.Status != tt.wantStatus {
				t.Errorf("ImageDriver(%s, %s, %s) = %s/%s, want %s/%s", tt.ref, tt.driver, tt.class, ans.Verdict, ans.Fact.Status, tt.want, tt.wantStatus)
			}
		})
	}
	img := get("nvcr.io/nvidia/tritonserver:25.03-py3")
	if got, f := img.SupportsGPU(ver(t, "7.0")); got != No || f.Status != Confirmed {
		t.Errorf("25.03 on Volta: %s/%s, want no/confirmed", got, f.Status)
	}
	if got, _ := img.SupportsGPU(ver(t, "9.0")); got != Yes {
		t.Errorf("25.03 on Hopper: %s", got)
	}
	if got, _ := get("nvcr.io/nvidia/pytorch:24.05-py3").SupportsGPU(ver(t, "7.0")); got != Unknown {
		t.Errorf("PyTorch 24.05 has no CC minimum in the data, got %s", got)
	}
	if img.Repository != "nvcr.io/nvidia/tritonserver" {
		t.Errorf("Repository = %q", img.Repository)
	}
}

func TestContainerToolkit(t *testing.T) {
	kb := mustKB(t)
	if r, ok := kb.ContainerToolkit(ver(t, "v1.17.3")); !ok || r.AptVersion != "1.17.3-1" {
		t.Errorf("ContainerToolkit(1.17.3) = %+v ok=%v", r, ok)
	}
	if _, ok := kb.ContainerToolkit(ver(t, "1.21.0")); ok {
		t.Error("1.21.0 found; newer than the table")
	}
	tests := []struct {
		v, feature string
		want       Tri
	}{
		{"1.14.4", "cdi-docker-enable", No},
		{"1.14.5", "cdi-docker-enable", Yes},
		{"1.17.8", "cdi-auto-refresh", No},
		{"1.18.0", "cdi-auto-refresh", Yes},
		{"1.14", "cdi-docker-enable", Unknown},
		{"1.20.0", "no-such-feature", Unknown},
	}
	for _, tt := range tests {
		if got, _ := kb.ToolkitSupports(ver(t, tt.v), tt.feature); got != tt.want {
			t.Errorf("ToolkitSupports(%s, %s) = %s, want %s", tt.v, tt.feature, got, tt.want)
		}
	}
	if m, ok := kb.ToolkitMinDriver(); !ok || m.Driver.String() != "418.81.07" || m.Status.CanBeError() {
		t.Errorf("ToolkitMinDriver = %s/%s ok=%v", m.Driver, m.Status, ok)
	}
	if r, ok := kb.RuntimeConfig("crio"); !ok || r.Command != "nvidia-ctk runtime configure --runtime=crio" {
		t.Errorf("RuntimeConfig(crio) = %+v", r)
	}
}

func TestDCGMMinDriver(t *testing.T) {
	kb := mustKB(t)
	tests := []struct {
		dcgm, flavor string
		nvswitch     bool
		want         string
		status       Status
		ok           bool
	}{
		{"4.6.0", "cuda13", false, "580", Derived, true},
		{"4.6.0", "cuda12", true, "525", Derived, true},
		{"4.6.0", "", false, "450", Confirmed, true},
		{"3.3.9", "", true, "450.80.02", Confirmed, true},
		{"2.4.7", "", false, "418", Confirmed, true},
		{"2.4.7", "", true, "450.80.02", Confirmed, true},
		{"5.0.0", "", false, "", StatusUnknown, false},
	}
	for _, tt := range tests {
		m, ok := kb.DCGMMinDriver(ver(t, tt.dcgm), tt.flavor, tt.nvswitch)
		if ok != tt.ok || m.Driver.String() != tt.want || m.Status != tt.status {
			t.Errorf("DCGMMinDriver(%s, %q, %v) = %s/%s ok=%v, want %s/%s", tt.dcgm, tt.flavor, tt.nvswitch, m.Driver, m.Status, ok, tt.want, tt.status)
		}
	}
}

func TestPackages(t *testing.T) {
	kb := mustKB(t)
	tests := []struct {
		name        string
		q           PackageQuery
		wantOK      bool
		wantName    string
		wantVersion string
		wantPin     string
	}{
		{"fabric manager deb", PackageQuery{Component: spec.ComponentFabricManager, Family: Debian, Version: drv(t, "550.127.08")}, true, "nvidia-fabricmanager-550", "550.127.08-1", ""},
		// The NVIDIA repo switched driver suffixes from -1 to -0ubuntu1, so
		// no version string is derivable.
		{"proprietary driver deb", PackageQuery{Component: spec.ComponentDriver, Family: Debian, Flavour: "proprietary", Version: drv(t, "550.127.08")}, true, "cuda-drivers-550", "", ""},
		{"open driver deb", PackageQuery{Component: spec.ComponentDriver, Family: Debian, Flavour: "open", Version: drv(t, "570")}, true, "nvidia-open", "", "nvidia-driver-pinning-570"},
		{"open driver rhel", PackageQuery{Component: spec.ComponentDriver, Family: RHEL, Flavour: "open", Version: drv(t, "580.95.05")}, true, "nvidia-open", "", "nvidia-driver:580-open"},
		{"cuda toolkit deb", PackageQuery{Component: spec.ComponentCUDA, Family: Debian, Version: ver(t, "12.6.3")}, true, "cuda-toolkit-12-6", "", ""},
		{"nccl deb", PackageQuery{Component: spec.ComponentNCCL, Family: Debian, Version: ver(t, "2.21.5"), CUDA: ver(t, "12.4")}, true, "libnccl2", "2.21.5-1+cuda12.4", ""},
		{"nccl rhel", PackageQuery{Component: spec.ComponentNCCL, Family: RHEL, Version: ver(t, "2.25.1"), CUDA: ver(t, "12.8.1")}, true, "libnccl", "2.25.1-1+cuda12.8", ""},
		{"nccl without cuda", PackageQuery{Component: spec.ComponentNCCL, Family: Debian, Version: ver(t, "2.21.5")}, true, "libnccl2", "", ""},
		{"dcgm 4 deb", PackageQuery{Component: spec.ComponentDCGM, Family: Debian, Version: ver(t, "4.6.0"), CUDA: ver(t, "12")}, true, "datacenter-gpu-manager-4-cuda12", "1:4.6.0-1", ""},
		{"dcgm 3 deb", PackageQuery{Component: spec.ComponentDCGM, Family: Debian, Version: ver(t, "3.3.9")}, true, "datacenter-gpu-manager", "", ""},
		{"container toolkit rhel", PackageQuery{Component: spec.ComponentContainerToolkit, Family: RHEL, Version: ver(t, "1.17.3")}, true, "nvidia-container-toolkit", "1.17.3-1", ""},
		// No row names the CUDA toolkit package on RHEL.
		{"cuda toolkit rhel", PackageQuery{Component: spec.ComponentCUDA, Family: RHEL, Version: ver(t, "12.6.3")}, false, "", "", ""},
		{"dcgm 4 without cuda", PackageQuery{Component: spec.ComponentDCGM, Family: Debian, Version: ver(t, "4.6.0")}, false, "", "", ""},
		{"fabric manager without driver", PackageQuery{Component: spec.ComponentFabricManager, Family: Debian}, false, "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, ok := kb.Package(tt.q)
			if ok != tt.wantOK || p.Name != tt.wantName || p.VersionString != tt.wantVersion || p.Pin != tt.wantPin {
				t.Errorf("Package = %q %q pin %q ok=%v, want %q %q pin %q ok=%v",
					p.Name, p.VersionString, p.Pin, ok, tt.wantName, tt.wantVersion, tt.wantPin, tt.wantOK)
			}
			if ok && (p.NameFact.Status != Confirmed || p.NameFact.Source() == "") {
				t.Errorf("name fact %s from %q", p.NameFact.Status, p.NameFact.Source())
			}
		})
	}
	name, f := kb.PackageName(spec.ComponentDCGM, RHEL, "cuda13", ver(t, "4.6.0"))
	if name != "datacenter-gpu-manager-4-cuda13" || f.Status != Confirmed {
		t.Errorf("PackageName(dcgm, rhel, cuda13) = %q/%s", name, f.Status)
	}
	if name, f := kb.PackageName(spec.ComponentCUDA, RHEL, "", ver(t, "12.6")); name != "" || f.Known() {
		t.Errorf("PackageName(cuda, rhel) = %q/%s, want unknown", name, f.Status)
	}
	for id, want := range map[string]DistroFamily{"ubuntu": Debian, "Rocky": RHEL, "debian": Debian} {
		if got, ok := ParseDistroFamily(id); !ok || got != want {
			t.Errorf("ParseDistroFamily(%s) = %s", id, got)
		}
	}
	if _, ok := ParseDistroFamily("arch"); ok {
		t.Error("arch has a family")
	}
}

func TestHostFacts(t *testing.T) {
	kb := mustKB(t)
	f, ok := kb.HostFact("docker-shm-default")
	if !ok || f.Value != "64m (67108864 bytes)" || f.Status != Confirmed {
		t.Errorf("docker-shm-default = %+v", f)
	}
	// NVIDIA's R560 post, read: proprietary drivers are unsupported on
	// Grace Hopper and Blackwell.
	if f, _ := kb.HostFact("open-modules-blackwell"); f.Status != Confirmed || !strings.HasPrefix(f.Source(), "https://developer.nvidia.com/blog/nvidia-transitions-fully-towards-open-source-gpu-kernel-modules/") {
		t.Errorf("open-modules-blackwell is %s citing %q, want confirmed from NVIDIA's post", f.Status, f.Source())
	}
	n := kb.NCCLThresholds()
	if len(n) == 0 || n[0].BusBWGBps != 460 || n[0].GPUs != 8 || n[0].Kind != "floor" {
		t.Errorf("first threshold = %+v", n[0])
	}
}

func TestStatus(t *testing.T) {
	tests := []struct {
		cell string
		want Status
	}{
		{"confirmed", Confirmed},
		{"confirmed (observed)", Confirmed},
		{"secondary (third-party classification)", Secondary},
		{"confirmed (cuda12.8) / unconfirmed (others)", Unconfirmed},
		{"confirmed / derived", Derived},
		{"partially confirmed", Secondary},
		// Text after ";" inside a remark is not a status.
		{"secondary (third parties; same memory on all variants)", Secondary},
		{"derived", Derived},
	}
	for _, tt := range tests {
		got, err := ParseStatus(tt.cell)
		if err != nil || got != tt.want {
			t.Errorf("ParseStatus(%q) = %s, %v, want %s", tt.cell, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "probably", "not read"} {
		if _, err := ParseStatus(bad); err == nil {
			t.Errorf("ParseStatus(%q) succeeded", bad)
		}
	}
	for s, want := range map[Status]bool{Confirmed: true, Derived: true, Secondary: false, Unconfirmed: false, StatusUnknown: false} {
		if s.CanBeError() != want {
			t.Errorf("%s.CanBeError() = %v", s, !want)
		}
	}
}

func TestPackageSet(t *testing.T) {
	kb := mustKB(t)
	for _, tc := range []struct {
		name string
		q    PackageQuery
		role PackageRole
		want []string
	}{
		{"canonical builds of the proprietary driver", PackageQuery{Component: spec.ComponentDriver, Family: Debian, Flavour: "proprietary", Version: drv(t, "550.127.08")}, RoleAccept, []string{"nvidia-driver-550", "nvidia-driver-550-server"}},
		{"canonical builds of the open driver", PackageQuery{Component: spec.ComponentDriver, Family: Debian, Flavour: "open", Version: drv(t, "580")}, RoleAccept, []string{"nvidia-driver-580-open", "nvidia-driver-580-server-open"}},
		{"rhel module-stream driver", PackageQuery{Component: spec.ComponentDriver, Family: RHEL, Flavour: "proprietary", Version: drv(t, "550")}, RoleAccept, []string{"nvidia-driver"}},
		{"open driver conflicts on debian", PackageQuery{Component: spec.ComponentDriver, Family: Debian, Flavour: "open", Version: drv(t, "580.95.05")}, RoleConflict, []string{"cuda-drivers-[0-9][0-9][0-9]", "nvidia-open", "nvidia-kernel-source-[0-9][0-9][0-9]", "nvidia-kernel-open-[0-9][0-9][0-9]", "nvidia-driver-pinning-[0-9][0-9][0-9]"}},
		{"proprietary driver keeps its module source", PackageQuery{Component: spec.ComponentDriver, Family: RHEL, Flavour: "proprietary", Version: drv(t, "535.183.06")}, RoleKeep, []string{"nvidia-kernel-source-535"}},
		{"fabric manager", PackageQuery{Component: spec.ComponentFabricManager, Family: Debian, Version: drv(t, "550.127.08")}, RoleKeep, []string{"cuda-drivers-fabricmanager-550"}},
		{"nccl deb companion", PackageQuery{Component: spec.ComponentNCCL, Family: Debian, Version: ver(t, "2.21.5")}, RoleCompanion, []string{"libnccl-dev"}},
		{"nccl rpm companion", PackageQuery{Component: spec.ComponentNCCL, Family: RHEL, Version: ver(t, "2.21.5")}, RoleCompanion, []string{"libnccl-devel"}},
		{"dcgm 4 core", PackageQuery{Component: spec.ComponentDCGM, Family: RHEL, Version: ver(t, "4.2.3")}, RoleCompanion, []string{"datacenter-gpu-manager-4-core"}},
		{"dcgm 3 has no core", PackageQuery{Component: spec.ComponentDCGM, Family: Debian, Version: ver(t, "3.3.9")}, RoleCompanion, nil},
		{"toolkit libraries", PackageQuery{Component: spec.ComponentContainerToolkit, Family: Debian, Version: ver(t, "1.17.8")}, RoleCompanion, []string{"nvidia-container-toolkit-base", "libnvidia-container-tools", "libnvidia-container1"}},
		{"cuda toolkit related", PackageQuery{Component: spec.ComponentCUDA, Family: Debian, Version: ver(t, "12.6")}, RoleRelated, []string{"cuda-toolkit-"}},
		{"no branch for a branch placeholder", PackageQuery{Component: spec.ComponentFabricManager, Family: Debian}, RoleKeep, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := kb.PackageSet(tc.q, tc.role)
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("PackageSet(%s) = %q, want %q", tc.role, got, tc.want)
			}
		})
	}
}

func TestNVLinkBusBWCeiling(t *testing.T) {
	kb := mustKB(t)
	model := func(name string) GPUModel {
		g, ok := kb.GPU(name)
		if !ok {
			t.Fatalf("%s not found", name)
		}
		return g
	}
	tests := []struct {
		name       string
		model      string
		collective string
		gpus       int
		want       float64
		nvls       bool
		wantStatus Status
	}{
		// 900 GB/s bidirectional: 450 one way; NVLS all_reduce 450 x 2 x 7/8.
		{"H100 all_reduce with NVLS", "H100 SXM5 80GB", "all_reduce", 8, 787.5, true, Derived},
		{"H100 all_gather", "H100 SXM5 80GB", "all_gather", 8, 450, false, Derived},
		{"H100 reduce_scatter", "H100 SXM5 80GB", "reduce_scatter", 8, 450, false, Derived},
		{"A100 all_reduce without NVLS", "A100 SXM4 80GB", "all_reduce", 8, 300, false, Secondary},
		{"B200 all_reduce, secondary figure", "B200", "all_reduce", 8, 1575, true, Secondary},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, ok := kb.NVLinkBusBWCeiling(model(tt.model), tt.collective, tt.gpus)
			if !ok || c.GBps != tt.want || c.NVLS != tt.nvls || c.Status != tt.wantStatus {
				t.Errorf("got %v %g nvls=%v %s, want %g nvls=%v %s", ok, c.GBps, c.NVLS, c.Status, tt.want, tt.nvls, tt.wantStatus)
			}
		})
	}
	best, ok := kb.BestPublishedBusBW("H100 SXM5 80GB", "all_reduce", 8)
	if !ok || best.BusBWGBps != 460 {
		t.Errorf("best published 8x H100 all_reduce = %v %g, want 460", ok, best.BusBWGBps)
	}
}

// TestNewestFact pins the data date of the embedded tables; update it with
// the tables (docs/knowledge-base.md, "Refreshing").
func TestNewestFact(t *testing.T) {
	kb := mustKB(t)
	d, ok := kb.NewestFact()
	if !ok {
		t.Fatal("no dated fact in the knowledge base")
	}
	if d.String() != "2026-09-18" || !strings.Contains(d.What, "NCCL 2.32.3") {
		t.Errorf("newest fact = %s %q, want 2026-09-18 (NCCL 2.32.3)", d, d.What)
	}
}
