package kb

import (
	"sort"
	"strconv"
	"strings"

	"github.com/gpuform/gpuform/internal/lazyre"
	"github.com/gpuform/gpuform/spec"
)

// KernelModules says which kernel-module flavours of the driver a GPU works
// with. Open modules exist from R515 and are the default from R560
// (facts.tsv open-modules-default).
type KernelModules uint8

const (
	// KernelModulesUnknown: not in the knowledge base.
	KernelModulesUnknown KernelModules = iota
	// OpenOrProprietary: Turing and newer data-center GPUs take either.
	OpenOrProprietary
	// OpenRequired: only the open modules support the GPU (Grace Hopper,
	// Blackwell).
	OpenRequired
	// ProprietaryOnly: pre-Turing GPUs (Maxwell, Pascal, Volta).
	ProprietaryOnly
)

// String names the flavour rule as the tables write it.
func (k KernelModules) String() string {
	switch k {
	case OpenOrProprietary:
		return "open or proprietary"
	case OpenRequired:
		return "open required"
	case ProprietaryOnly:
		return "proprietary only"
	}
	return "unknown"
}

// Supports reports whether the flavour ("open" or "proprietary") works with
// the GPU: Yes, No, or Unknown when the table does not say.
func (k KernelModules) Supports(flavour string) Tri {
	f := strings.ToLower(strings.TrimSpace(flavour))
	if k == KernelModulesUnknown || (f != "open" && f != "proprietary") {
		return Unknown
	}
	switch k {
	case OpenRequired:
		if f == "open" {
			return Yes
		}
		return No
	case ProprietaryOnly:
		if f == "proprietary" {
			return Yes
		}
		return No
	}
	return Yes
}

// Architecture is one row of gpu-arch.tsv.
type Architecture struct {
	// Name is "Hopper", "Blackwell", …
	Name string
	// ComputeCapabilities are the CCs the matrix lists for the row.
	ComputeCapabilities []Version
	// FirstCUDA is the first CUDA toolkit that supports the architecture.
	// Where the matrix prints two values (Hopper: 11.8 / 12.0) it is the
	// lower one, so that a rule never errs on a toolkit NVIDIA lists.
	FirstCUDA Version
	// LastCUDAMajor is the last CUDA major that targets it, 0 when ongoing.
	LastCUDAMajor int
	// LastDriverBranch is the last driver branch that supports it, 0 when
	// ongoing or unknown (see LastDriverKnown).
	LastDriverBranch int
	// LastDriverKnown is false when the table does not state the last
	// branch.
	LastDriverKnown bool
	Fact
}

// GPUModel is one row of gpu-models.tsv. Every property has its own Fact,
// because the table gives each column its own status.
type GPUModel struct {
	// Name is the model cell as written ("H100 SXM5 80GB (HGX/DGX H100)").
	Name string
	// Architecture is the architecture name ("Hopper").
	Architecture string
	// ComputeCapability is zero when unknown.
	ComputeCapability Version
	CCFact            Fact
	// MinCUDA is the first CUDA toolkit that supports the model.
	MinCUDA     Version
	MinCUDAFact Fact
	// MinDriver is the minimum Linux driver (zero Driver when unknown).
	MinDriver DriverMinimum
	// MemoryGB is the memory per GPU in GB as the table gives it (the first
	// figure where it lists variants); 0 when unknown.
	MemoryGB   float64
	MemoryText string
	MemoryFact Fact
	// NVLinkGeneration is the NVLink cell as written ("4th gen, 18 links").
	NVLinkGeneration string
	// NVLinkGBps is the NVLink bandwidth per GPU in GB/s (900 for H100
	// SXM); 0 with a known NVLinkFact means no NVLink.
	NVLinkGBps float64
	NVLinkFact Fact
	// NVSwitch says whether the model's HGX/DGX 8-GPU board has NVSwitch.
	NVSwitch     Tri
	NVSwitchFact Fact
	// FabricManager says whether such a board needs Fabric Manager.
	FabricManager     Tri
	FabricManagerFact Fact
	// KernelModules says which driver kernel-module flavours work.
	KernelModules     KernelModules
	KernelModulesFact Fact
	// PCIeGeneration is the host PCIe generation (0 when not applicable or
	// unknown; see PCIeFact).
	PCIeGeneration int
	PCIeFact       Fact
	// MaxPowerW is the published board or module power limit in watts (the
	// first figure where sources conflict); 0 when unknown.
	MaxPowerW float64
	PowerFact Fact
	// ForwardCompat says whether CUDA forward compatibility applies to the
	// model (a data-center GPU), from gpu-forward-compat.tsv.
	ForwardCompat     Tri
	ForwardCompatFact Fact
	// NVLS says whether the model's NVSwitch board runs NVLink SHARP
	// reductions (nvlink-sharp.tsv), which lifts all_reduce bus bandwidth.
	NVLS     Tri
	NVLSFact Fact
	// Fact is the row: sources and notes. The row has no status column;
	// Fact.Status is that of the compute capability.
	Fact
}

// NormalizeGPUName folds the ways people write a GPU model into one key:
// upper case, "-", "_", "/" and "," as spaces, no leading "NVIDIA" or
// "Tesla", so "NVIDIA H100-SXM5-80GB", "h100 sxm5 80gb" and "H100_SXM5_80GB"
// are the same name.
func NormalizeGPUName(s string) string {
	u := strings.ToUpper(s)
	u = strings.NewReplacer("-", " ", "_", " ", "/", " ", ",", " ").Replace(u)
	f := strings.Fields(u)
	for len(f) > 0 && (f[0] == "NVIDIA" || f[0] == "TESLA") {
		f = f[1:]
	}
	return strings.Join(f, " ")
}

// modelKey is the model cell without its parenthesised remark:
// "H100 SXM5 80GB (HGX/DGX H100)" → "H100 SXM5 80GB".
func modelKey(cell string) string {
	if i := strings.IndexByte(cell, '('); i > 0 {
		cell = cell[:i]
	}
	return strings.TrimSpace(cell)
}

func (kb *KB) loadArchitectures() error {
	t, err := readTable(kb.fsys, "data/gpu-arch.tsv", "architecture", "compute_capability", "first_cuda_toolkit",
		"last_cuda_toolkit", "last_driver_branch", "status", "source", "notes")
	if err != nil {
		return err
	}
	for _, r := range t.rows {
		st, err := r.status("status")
		if err != nil {
			return err
		}
		a := Architecture{Name: r.get("architecture"), Fact: r.fact(st, "source", "notes")}
		for _, c := range strings.Split(r.get("compute_capability"), ",") {
			v, err := ParseVersion(strings.TrimSpace(c))
			if err != nil {
				return r.errorf("compute_capability: %v", err)
			}
			a.ComputeCapabilities = append(a.ComputeCapabilities, v)
		}
		first := r.get("first_cuda_toolkit")
		if i := strings.IndexByte(first, '('); i >= 0 {
			first = first[:i]
		}
		for _, c := range strings.Split(first, "/") {
			v, err := ParseVersion(strings.TrimSpace(c))
			if err != nil {
				return r.errorf("first_cuda_toolkit: %v", err)
			}
			if a.FirstCUDA.IsZero() || v.Less(a.FirstCUDA) {
				a.FirstCUDA = v
			}
		}
		if last := leadingWord(r.get("last_cuda_toolkit")); last != "ongoing" {
			v, err := ParseVersion(last)
			if err != nil {
				return r.errorf("last_cuda_toolkit: %v", err)
			}
			a.LastCUDAMajor = v.Major()
		}
		switch ld := leadingWord(r.get("last_driver_branch")); ld {
		case "ongoing":
			a.LastDriverKnown = true
		case "unconfirmed":
		default:
			v, err := ParseDriverVersion(ld)
			if err != nil {
				return r.errorf("last_driver_branch: %v", err)
			}
			a.LastDriverBranch, a.LastDriverKnown = v.Branch(), true
		}
		kb.archs = append(kb.archs, a)
	}
	return nil
}

// Architectures returns every architecture row (Kepler has two).
func (kb *KB) Architectures() []Architecture {
	return append([]Architecture(nil), kb.archs...)
}

// ArchitectureOf returns the architecture row that lists compute capability
// cc. ok is false for CCs the matrix does not list (10.3, 11.0, 12.1 appear
// only on the CUDA GPUs page).
func (kb *KB) ArchitectureOf(cc Version) (Architecture, bool) {
	for _, a := range kb.archs {
		for _, c := range a.ComputeCapabilities {
			if c.Compare(cc) == 0 {
				return a, true
			}
		}
	}
	return Architecture{}, false
}

// ArchitectureNamed returns the first row of the architecture called name
// (case-insensitive), the one NVIDIA's matrix lists first.
func (kb *KB) ArchitectureNamed(name string) (Architecture, bool) {
	for _, a := range kb.archs {
		if strings.EqualFold(a.Name, strings.TrimSpace(name)) {
			return a, true
		}
	}
	return Architecture{}, false
}

func (kb *KB) loadGPUs() error {
	if err := kb.loadGPUModels(); err != nil {
		return err
	}
	if err := kb.loadForwardCompat(); err != nil {
		return err
	}
	return kb.loadNVLS()
}

// loadGPUModels reads gpu-models.tsv and gpu-aliases.tsv: the models and
// every name they are known by.
func (kb *KB) loadGPUModels() error {
	t, err := readTable(kb.fsys, "data/gpu-models.tsv", "model", "architecture", "compute_capability", "cc_status",
		"min_cuda_toolkit", "min_driver_linux", "min_driver_status", "memory_per_gpu", "memory_status",
		"nvlink_generation", "nvlink_bw_per_gpu", "nvlink_status", "nvswitch_on_hgx_dgx_8gpu_board",
		"fabric_manager_needed", "kernel_module_flavor", "kernel_module_status", "notes", "sources",
		"pcie_generation", "max_power", "pcie_power_status")
	if err != nil {
		return err
	}
	for _, r := range t.rows {
		g, err := parseGPURow(r)
		if err != nil {
			return err
		}
		kb.gpus = append(kb.gpus, g)
		kb.addAlias(g.Name, len(kb.gpus)-1)
		kb.addAlias(modelKey(g.Name), len(kb.gpus)-1)
	}

	t, err = readTable(kb.fsys, "data/gpu-aliases.tsv", "alias", "model", "status", "sources", "notes")
	if err != nil {
		return err
	}
	for _, r := range t.rows {
		if _, err := r.status("status"); err != nil {
			return err
		}
		idx := -1
		for i, g := range kb.gpus {
			if g.Name == r.get("model") {
				idx = i
			}
		}
		if idx < 0 {
			return r.errorf("model %q is not a model of gpu-models.tsv", r.get("model"))
		}
		kb.addAlias(r.get("alias"), idx)
	}
	return nil
}

// loadNVLS reads nvlink-sharp.tsv.
func (kb *KB) loadNVLS() error {
	t, err := readTable(kb.fsys, "data/nvlink-sharp.tsv", "model", "nvls", "status", "sources", "notes")
	if err != nil {
		return err
	}
	for i := range kb.gpus {
		kb.gpus[i].NVLSFact = Fact{Status: StatusUnknown}
	}
	seen := map[string]bool{}
	for _, r := range t.rows {
		st, err := r.status("status")
		if err != nil {
			return err
		}
		idx := kb.modelIndex(r.get("model"))
		if idx < 0 {
			return r.errorf("model %q is not a model of gpu-models.tsv", r.get("model"))
		}
		if seen[r.get("model")] {
			return r.errorf("model %q defined twice", r.get("model"))
		}
		seen[r.get("model")] = true
		g := &kb.gpus[idx]
		switch r.get("nvls") {
		case "yes":
			g.NVLS = Yes
		case "no":
			g.NVLS = No
		default:
			return r.errorf("nvls %q: want yes or no", r.get("nvls"))
		}
		g.NVLSFact = r.fact(st, "sources", "notes")
	}
	return nil
}

// modelIndex is the index of the gpu-models.tsv row named exactly name, -1
// when there is none.
func (kb *KB) modelIndex(name string) int {
	for i, g := range kb.gpus {
		if g.Name == name {
			return i
		}
	}
	return -1
}

// loadForwardCompat reads gpu-forward-compat.tsv: whether CUDA forward
// compatibility (and so an NGC image's data-center exceptions) applies to a
// model. A model without a row stays Unknown.
func (kb *KB) loadForwardCompat() error {
	t, err := readTable(kb.fsys, "data/gpu-forward-compat.tsv", "model", "forward_compat", "status", "sources", "notes")
	if err != nil {
		return err
	}
	for i := range kb.gpus {
		kb.gpus[i].ForwardCompatFact = Fact{Status: StatusUnknown}
	}
	seen := map[string]bool{}
	for _, r := range t.rows {
		st, err := r.status("status")
		if err != nil {
			return err
		}
		name := r.get("model")
		if seen[name] {
			return r.errorf("model %q defined twice", name)
		}
		seen[name] = true
		idx := -1
		for i, g := range kb.gpus {
			if g.Name == name {
				idx = i
			}
		}
		if idx < 0 {
			return r.errorf("model %q is not a model of gpu-models.tsv", name)
		}
		g := &kb.gpus[idx]
		switch r.get("forward_compat") {
		case "yes":
			g.ForwardCompat = Yes
		case "no":
			g.ForwardCompat = No
		case "unknown":
			g.ForwardCompat = Unknown
			st = StatusUnknown
		default:
			return r.errorf("forward_compat %q: want yes, no or unknown", r.get("forward_compat"))
		}
		g.ForwardCompatFact = r.fact(st, "sources", "notes")
	}
	return nil
}

func (kb *KB) addAlias(alias string, idx int) {
	k := NormalizeGPUName(alias)
	for _, i := range kb.aliases[k] {
		if i == idx {
			return
		}
	}
	kb.aliases[k] = append(kb.aliases[k], idx)
}

func parseGPURow(r row) (GPUModel, error) {
	base := r.fact(Confirmed, "sources", "notes")
	g := GPUModel{Name: r.get("model"), Fact: base}
	if f := strings.Fields(r.get("architecture")); len(f) > 0 {
		g.Architecture = f[0]
	}

	ccSt, err := r.status("cc_status")
	if err != nil {
		return g, err
	}
	cc, ok, err := leadingVersion(r.get("compute_capability"), false)
	if err != nil {
		return g, r.errorf("compute_capability: %v", err)
	}
	g.CCFact = base.withStatus(StatusUnknown)
	if ok {
		g.ComputeCapability = cc
		g.CCFact = base.withStatus(cellStatus(r.get("compute_capability"), ccSt))
	}

	// min_cuda_toolkit has no status column of its own: its values are the
	// first toolkit of the architecture in NVIDIA's architecture matrix
	// (gpu-arch.tsv, confirmed), and "by architecture" marks a value carried
	// over from the architecture rather than read for the product: derived.
	cell := r.get("min_cuda_toolkit")
	mc, ok, err := leadingVersion(cell, false)
	if err != nil {
		return g, r.errorf("min_cuda_toolkit: %v", err)
	}
	g.MinCUDAFact = base.withStatus(StatusUnknown)
	if ok {
		st := cellStatus(cell, Confirmed)
		if strings.Contains(cell, "by architecture") {
			st = st.Weaker(Derived)
		}
		g.MinCUDA, g.MinCUDAFact = mc, base.withStatus(st)
	}

	mdSt, err := r.status("min_driver_status")
	if err != nil {
		return g, err
	}
	cell = r.get("min_driver_linux")
	md, ok, err := leadingVersion(cell, true)
	if err != nil {
		return g, r.errorf("min_driver_linux: %v", err)
	}
	g.MinDriver = DriverMinimum{Fact: base.withStatus(StatusUnknown)}
	if ok {
		st := cellStatus(cell, mdSt)
		if strings.Contains(cell, "by architecture") {
			st = st.Weaker(Derived)
		}
		g.MinDriver = DriverMinimum{Driver: md, Fact: base.withStatus(st)}
	}

	memSt, err := r.status("memory_status")
	if err != nil {
		return g, err
	}
	g.MemoryText = r.get("memory_per_gpu")
	g.MemoryFact = base.withStatus(StatusUnknown)
	if n, ok := leadingNumber(g.MemoryText); ok {
		g.MemoryGB, g.MemoryFact = n, base.withStatus(cellStatus(g.MemoryText, memSt))
	}

	nvSt, err := r.status("nvlink_status")
	if err != nil {
		return g, err
	}
	g.NVLinkGeneration = r.get("nvlink_generation")
	cell = r.get("nvlink_bw_per_gpu")
	g.NVLinkFact = base.withStatus(StatusUnknown)
	switch {
	case strings.HasPrefix(cell, "not applicable"):
		// No NVLink on the product (the generation column says "none").
		g.NVLinkFact = base.withStatus(nvSt)
	default:
		if n, ok := leadingNumber(cell); ok {
			unit := strings.TrimSpace(strings.TrimLeft(cell, "0123456789.~ "))
			switch {
			case strings.HasPrefix(unit, "TB/s"):
				n *= 1000
			case strings.HasPrefix(unit, "GB/s"):
			default:
				return g, r.errorf("nvlink_bw_per_gpu %q: want GB/s or TB/s", cell)
			}
			g.NVLinkGBps, g.NVLinkFact = n, base.withStatus(cellStatus(cell, nvSt))
		}
	}

	// NVSwitch and Fabric Manager columns have no status column. The table
	// (its sources column) takes NVSwitch use from NVIDIA's GPU Operator platform list
	// and NVIDIA AI Enterprise NVSwitch list, and facts.tsv fm-scope
	// (confirmed) says NVSwitch boards need Fabric Manager: "yes" is
	// confirmed. "no" is for PCIe products, which have no NVSwitch board:
	// derived from the form factor.
	g.NVSwitch, g.NVSwitchFact = yesNo(r.get("nvswitch_on_hgx_dgx_8gpu_board"), base)
	g.FabricManager, g.FabricManagerFact = yesNo(r.get("fabric_manager_needed"), base)

	kmSt, err := r.status("kernel_module_status")
	if err != nil {
		return g, err
	}
	cell = r.get("kernel_module_flavor")
	g.KernelModulesFact = base.withStatus(cellStatus(cell, kmSt))
	switch w := leadingWord(cell); {
	case strings.HasPrefix(w, "open or proprietary"):
		g.KernelModules = OpenOrProprietary
	case strings.HasPrefix(w, "open required"):
		g.KernelModules = OpenRequired
	case strings.HasPrefix(w, "proprietary only"):
		g.KernelModules = ProprietaryOnly
	default:
		return g, r.errorf("kernel_module_flavor %q: want open or proprietary, open required or proprietary only", cell)
	}

	ppSt, err := r.status("pcie_power_status")
	if err != nil {
		return g, err
	}
	cell = r.get("pcie_generation")
	g.PCIeFact = base.withStatus(StatusUnknown)
	switch {
	case strings.HasPrefix(cell, "Gen"):
		n, ok := leadingNumber(cell[3:])
		if !ok {
			return g, r.errorf("pcie_generation %q: want GenN", cell)
		}
		g.PCIeGeneration, g.PCIeFact = int(n), base.withStatus(cellStatus(cell, ppSt))
	case strings.HasPrefix(cell, "not applicable"):
		g.PCIeFact = base.withStatus(ppSt)
	}
	cell = r.get("max_power")
	g.PowerFact = base.withStatus(StatusUnknown)
	if n, ok := leadingNumber(strings.TrimPrefix(cell, "up to ")); ok {
		rest := strings.TrimSpace(strings.TrimLeft(strings.TrimPrefix(cell, "up to "), "0123456789.,-~ "))
		if strings.HasPrefix(rest, "kW") {
			n *= 1000
		}
		g.MaxPowerW, g.PowerFact = n, base.withStatus(cellStatus(cell, ppSt))
	}
	// The row has no status of its own; it stands or falls with the
	// identity of the model, i.e. its compute capability.
	g.Fact.Status = g.CCFact.Status

	// Cite, for each field, the page it comes from (of the row's sources).
	g.CCFact = g.CCFact.preferSource("developer.nvidia.com/cuda-gpus", "cuda-legacy-gpus")
	g.MinCUDAFact = g.MinCUDAFact.preferSource("cuda-toolkit-driver-and-architecture-matrix")
	g.MinDriver.Fact = g.MinDriver.Fact.preferSource("cuda-toolkit-release-notes", "platform-support")
	if strings.Contains(r.get("min_driver_linux"), "GPU Operator") && !strings.Contains(r.get("min_driver_linux"), "CUDA 12.8 GA") {
		g.MinDriver.Fact = g.MinDriver.Fact.preferSource("platform-support")
	}
	if strings.Contains(r.get("min_driver_linux"), "MLPerf") {
		// The value is what NVIDIA's own MLPerf system ran; the driver
		// is named in the system's JSON file, not system_descriptions.tsv.
		g.MinDriver.Fact = g.MinDriver.Fact.preferSource("_TRT.json", "closed/NVIDIA/systems")
	}
	g.MemoryFact = g.MemoryFact.preferSource("system_descriptions", "mlcommons", "release-notes")
	g.NVLinkFact = g.NVLinkFact.preferSource("system_descriptions", "mlcommons", "nvlinkinfo")
	g.NVSwitchFact = g.NVSwitchFact.preferSource("nvswitch.html", "platform-support")
	g.FabricManagerFact = g.FabricManagerFact.preferSource("fabric-manager-user-guide")
	if g.KernelModulesFact.Status.CanBeError() {
		g.KernelModulesFact = g.KernelModulesFact.preferSource("kernel-modules.html", "developer.nvidia.com/blog/nvidia-transitions-fully-towards-open-source", "platform-support")
	} else {
		g.KernelModulesFact = g.KernelModulesFact.preferSource("open-source-gpu-kernel-modules", "slicast")
	}
	g.PCIeFact = g.PCIeFact.preferSource("system_descriptions", "mlcommons")
	g.PowerFact = g.PowerFact.preferSource("system_descriptions", "mlcommons")
	return g, nil
}

// yesNo reads a "yes …" / "no" / "not applicable" / "unconfirmed" cell of a
// column without its own status (see parseGPURow).
func yesNo(cell string, base Fact) (Tri, Fact) {
	switch w := leadingWord(cell); {
	case strings.HasPrefix(w, "yes"):
		return Yes, base.withStatus(cellStatus(cell, Confirmed))
	case w == "no":
		return No, base.withStatus(Derived)
	}
	return Unknown, base.withStatus(StatusUnknown)
}

// GPUModels returns every model row, in table order.
// NVLinks is how many NVLinks each GPU of the model has, as its NVLink
// cell says ("4th gen, 18 links"); 0 when the cell does not say.
// nvidia-smi topo -m writes an NVSwitch board's pairs as NV and this
// number (NV18 on HGX H100).
func (m GPUModel) NVLinks() int {
	if m := nvlinkLinksRe.FindStringSubmatch(m.NVLinkGeneration); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 0
}

var nvlinkLinksRe = lazyre.New(`\b(\d+) links\b`)

func (kb *KB) GPUModels() []GPUModel {
	return append([]GPUModel(nil), kb.gpus...)
}

// GPU finds a GPU model by any common spelling ("H100-SXM5-80GB", "NVIDIA
// H100 80GB HBM3" as NVML reports it, "HGX H100"). ok is false when the name
// is unknown or names several models (a bare "H100" covers SXM, PCIe and NVL
// parts: see GPUCandidates).
func (kb *KB) GPU(name string) (GPUModel, bool) {
	idx := kb.aliases[NormalizeGPUName(name)]
	if len(idx) != 1 {
		return GPUModel{}, false
	}
	return kb.gpus[idx[0]], true
}

// GPUCandidates returns every model a name may mean: one for a precise name,
// several for a family name such as "H100", none for an unknown name.
func (kb *KB) GPUCandidates(name string) []GPUModel {
	idx := append([]int(nil), kb.aliases[NormalizeGPUName(name)]...)
	sort.Ints(idx)
	out := make([]GPUModel, 0, len(idx))
	for _, i := range idx {
		out = append(out, kb.gpus[i])
	}
	return out
}

// GPUArchitecture returns the architecture of a GPU name, also for family
// names when every candidate shares the same compute capability ("H100" is
// Hopper whichever part it is). ok is false when the name is unknown, the
// candidates disagree, or the CC is not in the architecture matrix.
func (kb *KB) GPUArchitecture(name string) (Architecture, bool) {
	cands := kb.GPUCandidates(name)
	if len(cands) == 0 || cands[0].ComputeCapability.IsZero() {
		return Architecture{}, false
	}
	cc := cands[0].ComputeCapability
	for _, c := range cands[1:] {
		if c.ComputeCapability.Compare(cc) != 0 {
			return Architecture{}, false
		}
	}
	return kb.ArchitectureOf(cc)
}

// GPUModelTable is the model table as spec.Load checks gpu_model against it:
// a name is known when it is a model, an alias or a family name (a bare
// "H100" is known, though lint cannot tell which H100 it is), and the names
// suggested for an unknown one are the model cells without their remarks.
func (kb *KB) GPUModelTable() *spec.GPUModelTable {
	return kb.gpuModelTable()
}

// LoadGPUModelTable is Load().GPUModelTable() for a command that needs
// nothing else of the knowledge base (facts): it parses the two model
// tables alone, not every table (Load allocates about 2.5 MB and keeps
// about 0.9 MB, most of it tables facts never reads).
func LoadGPUModelTable() (*spec.GPUModelTable, error) {
	kb := &KB{fsys: dataFS, aliases: map[string][]int{}}
	if err := kb.loadGPUModels(); err != nil {
		return nil, err
	}
	return kb.gpuModelTable(), nil
}

func (kb *KB) gpuModelTable() *spec.GPUModelTable {
	names := make([]string, 0, len(kb.gpus))
	for _, g := range kb.gpus {
		names = append(names, modelKey(g.Name))
	}
	return &spec.GPUModelTable{
		Known:  func(name string) bool { return len(kb.aliases[NormalizeGPUName(name)]) > 0 },
		Names:  names,
		Source: "kb/data/gpu-models.tsv (or an alias of gpu-aliases.tsv)",
	}
}
