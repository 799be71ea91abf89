package spec

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/dynblock"

	"github.com/gpuform/gpuform/internal/cmdline"
	"github.com/gpuform/gpuform/internal/lazyre"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

var nodeBlockSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "hosts", Required: true},
		{Name: "hardware"},
		{Name: "tensor_parallel"},
		{Name: "sysctl"},
		{Name: "kernel_args"},
		{Name: "cpu_governor"},
	},
	Blocks: []hcl.BlockHeaderSchema{
		{Type: "driver"}, {Type: "cuda"}, {Type: "nccl"}, {Type: "dcgm"},
		{Type: "container"}, {Type: "shm"}, {Type: "numa"}, {Type: "affinity"},
		{Type: "hugepages"}, {Type: "verify"}, {Type: "rollout"}, {Type: "slurm"},
		{Type: "bench"}, {Type: "health"},
		{Type: "workload", LabelNames: []string{"name"}},
		{Type: "nvlink_domain", LabelNames: []string{"name"}},
		{Type: "firmware"},
	},
}

var (
	driverSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
		{Name: "version", Required: true}, {Name: "kernel_module"}, {Name: "persistence_mode"},
		{Name: "fabric_manager"}, {Name: "peermem"}, {Name: "imex"},
	}}
	componentSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "version", Required: true}}}
	containerSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
		{Name: "runtime"}, {Name: "nvidia_container_toolkit"}, {Name: "default_runtime"},
		{Name: "default_shm_size"}, {Name: "ulimits"}, {Name: "images"}, {Name: "cdi"},
		{Name: "enroot_cache_path"}, {Name: "enroot_data_path"}, {Name: "enroot_restrict_dev"}, {Name: "pyxis"},
		{Name: "apptainer_always_use_nv"}, {Name: "apptainer_use_nvidia_container_cli"}, {Name: "apptainer_allow_setuid"}, {Name: "apptainer_mount_dev"},
		{Name: "image_dir"}, {Name: "image_dir_shared"}, {Name: "containerd_runtime_options"},
		{Name: "enroot_version"}, {Name: "enroot_caps"}, {Name: "pyxis_version"}, {Name: "apptainer_version"},
	}}
	shmSchema       = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "size", Required: true}}}
	numaSchema      = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "balancing"}}, Blocks: []hcl.BlockHeaderSchema{{Type: "bind"}}}
	numaBindSchema  = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "gpus", Required: true}, {Name: "node", Required: true}}}
	affinitySchema  = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "gpu_nic"}, {Name: "nccl_env"}, {Name: "nccl_ib_hca"}, {Name: "nccl_socket_ifname"}, {Name: "nccl_topo_file"}, {Name: "nic_irq_affinity"}, {Name: "mtu"}}}
	hugepagesSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "size", Required: true}, {Name: "count", Required: true}}}
	verifySchema    = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "optional"}, {Name: "isolation"}, {Name: "outliers"}, {Name: "outlier_margin_percent"}}, Blocks: []hcl.BlockHeaderSchema{{Type: "nvml"}, {Type: "nccl_test", LabelNames: []string{"name"}}, {Type: "burnin"}, {Type: "kubernetes"}}}
	burninSchema    = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "duration"}, {Name: "max_age"}}}
	nvmlSchema      = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
		{Name: "gpus"}, {Name: "ecc"}, {Name: "min_pcie_gen"}, {Name: "min_pcie_width"}, {Name: "nvlink"}, {Name: "max_temperature_c"}, {Name: "mig"},
	}}
	ncclTestSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "command", Required: true}, {Name: "min_busbw_gbps"}, {Name: "timeout"}, {Name: "multi_node"}, {Name: "network"}}}
	rolloutSchema  = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "batch"}, {Name: "max_failures"}, {Name: "drain"}, {Name: "reboot"}, {Name: "step_timeout"},
		{Name: "drain_timeout"}, {Name: "drain_poll"}, {Name: "foreign_drain"}, {Name: "slurm_node_name"}, {Name: "slurm_client"}, {Name: "unit"}}}
)

// Patterns for values that end up in files or command lines on a node.
var (
	sysctlKeyPattern   = lazyre.New(`^[a-z0-9_]+(\.[a-zA-Z0-9_\-]+)+$`)
	sysctlValuePattern = lazyre.New(`^[0-9A-Za-z_.:\- ]{1,128}$`)
	// kernelArgPattern wants a parameter name that starts with a letter,
	// digit or underscore: "--" ends the kernel's parameters and hands the
	// rest of the command line to init, and "-x" is not a parameter.
	kernelArgPattern  = lazyre.New(`^[a-zA-Z0-9_][a-zA-Z0-9_.\-]*(=[a-zA-Z0-9_.,:\-/]+)?$`)
	deviceNamePattern = lazyre.New(`^[a-zA-Z0-9_.\-]{1,32}$`)
	imagePattern      = lazyre.New(`^[a-z0-9.\-]+(:[0-9]+)?(/[a-z0-9._\-]+)+(:[A-Za-z0-9._\-]{1,128})?(@sha256:[a-f0-9]{64})?$`)
	// ncclCommandPattern allows the arguments nccl-tests takes and nothing
	// that a shell would treat as syntax.
	ncclCommandPattern = lazyre.New(`^[A-Za-z0-9_./=, \-]+$`)
	// enrootPathPattern is an absolute path, optionally per user or group
	// the way enroot's own examples write it ($(id -u), ${UID}): enroot
	// expands its config values in a shell, so nothing else of shell
	// syntax may reach the file.
	enrootPathPattern = lazyre.New(`^/([A-Za-z0-9._+@/\-]|\$\(id -[ug]\)|\$\{(USER|UID)\})*$`)
)

var ulimitNames = []string{"memlock", "stack", "nofile", "nproc", "core"}

// decodeNodeBlock expands dynamic blocks in a node body and decodes it.
func decodeNodeBlock(b *hcl.Block, ctx *hcl.EvalContext) (*Node, hcl.Diagnostics) {
	n := &Node{Name: b.Labels[0], DeclRange: b.DefRange}
	body := dynblock.Expand(b.Body, ctx)
	content, diags := body.Content(nodeBlockSchema)
	dec := &attrDecoder{ctx: ctx, attrs: content.Attributes, block: b.DefRange, schema: nodeBlockSchema}

	if a, ok := content.Attributes["hosts"]; ok {
		n.HostsRange = a.Expr.Range()
		v, d := a.Expr.Value(ctx)
		diags = append(diags, d...)
		if !d.HasErrors() {
			hosts, d := hostsFromValue(v, a.Expr)
			diags = append(diags, d...)
			n.Hosts = hosts
		}
	}
	if a, ok := content.Attributes["hardware"]; ok {
		v, d := a.Expr.Value(ctx)
		d = append(d, duplicateKeys(a.Expr)...)
		diags = append(diags, d...)
		if u, sens := unmarkAll(v); sens && !d.HasErrors() {
			diags = append(diags, sensitiveNotAllowedDiag("The hardware description", a.Expr.Range()))
		} else if !d.HasErrors() && v.IsWhollyKnown() {
			hw, d := decodeHardware(u, a.Expr)
			diags = append(diags, d...)
			n.Hardware = hw
		}
	}
	n.TensorParallel = dec.int("tensor_parallel", 1, 1<<16)
	if n.TensorParallel.Set {
		dec.diags = append(dec.diags, &hcl.Diagnostic{
			Severity: hcl.DiagWarning,
			Summary:  "Deprecated attribute",
			Detail:   "A node's tensor_parallel still works, but a workload block says more and lint checks more of it (memory per GPU and the whole parallel layout, not only the tensor-parallel group): workload \"NAME\" { parameters = \"70B\", tensor_parallel = 8 }.",
			Subject:  n.TensorParallel.Range.Ptr(),
		})
	}
	n.Sysctl, n.SysctlRange = dec.stringMap("sysctl")
	for _, k := range slices.Sorted(maps.Keys(n.Sysctl)) {
		if !sysctlKeyPattern.MatchString(k) || !sysctlValuePattern.MatchString(n.Sysctl[k].V) {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid sysctl",
				Detail:   fmt.Sprintf("%q = %s is not a sysctl setting gpuform can write: keys look like \"vm.swappiness\", values are numbers or words.", k, n.Sysctl[k].Show()),
				Subject:  n.Sysctl[k].Range.Ptr(),
			})
			delete(n.Sysctl, k)
		}
	}
	n.KernelArgs, n.KernelArgsRange = dec.stringList("kernel_args")
	n.KernelArgs = filterPattern(&diags, n.KernelArgs, kernelArgPattern, "Invalid kernel argument", "Kernel arguments look like \"iommu=pt\" or \"intel_iommu=on\".")
	n.CPUGovernor = dec.enum("cpu_governor", "performance", "powersave", "ondemand", "schedutil", "conservative", "userspace")
	diags = append(diags, dec.diags...)

	seen := map[string]hcl.Range{}
	for _, blk := range content.Blocks {
		key := strings.Join(append([]string{blk.Type}, blk.Labels...), " ")
		if prev, dup := seen[key]; dup {
			d := duplicateDiag(blk.Type, strings.Join(blk.Labels, " "), blk.DefRange, prev)
			if len(blk.Labels) > 0 {
				d.Detail = fmt.Sprintf("A %s %q was already declared in this node block at %s. Each name may be used once per node.", blk.Type, strings.Join(blk.Labels, " "), prev)
			}
			diags = append(diags, d)
			continue
		}
		seen[key] = blk.DefRange
		var d hcl.Diagnostics
		switch blk.Type {
		case "driver":
			n.Driver, d = decodeDriver(blk, ctx)
		case "cuda":
			n.CUDA, d = decodeComponent(blk, ctx)
		case "nccl":
			n.NCCL, d = decodeComponent(blk, ctx)
		case "dcgm":
			n.DCGM, d = decodeComponent(blk, ctx)
		case "container":
			n.Container, d = decodeContainer(blk, ctx)
		case "shm":
			n.Shm, d = decodeShm(blk, ctx)
		case "numa":
			n.NUMA, d = decodeNUMA(blk, ctx)
		case "affinity":
			n.Affinity, d = decodeAffinity(blk, ctx)
		case "hugepages":
			n.Hugepages, d = decodeHugepages(blk, ctx)
		case "verify":
			n.Verify, d = decodeVerify(blk, ctx)
		case "rollout":
			n.Rollout, d = decodeRollout(blk, ctx)
		case "slurm":
			n.Slurm, d = decodeNodeSlurm(blk, ctx)
		case "bench":
			n.Bench, d = decodeBench(blk, ctx)
		case "health":
			n.Health, d = decodeHealth(blk, ctx)
		case "workload":
			var w *Workload
			w, d = decodeWorkload(blk, ctx)
			n.Workloads = append(n.Workloads, w)
		case "firmware":
			n.Firmware, d = decodeFirmware(blk, ctx)
		case "nvlink_domain":
			var nd *NVLinkDomain
			nd, d = decodeNVLinkDomain(blk, ctx, n.Hosts)
			n.NVLinkDomains = append(n.NVLinkDomains, nd)
		}
		diags = append(diags, d...)
	}
	diags = append(diags, checkNVLinkDomains(n)...)
	if d := breakerAllowsNone(n); d != nil {
		diags = append(diags, d)
	}
	// numa { balancing } is written as kernel.numa_balancing, in the same
	// sysctl file: with both, one would silently override the other.
	if s, ok := n.Sysctl["kernel.numa_balancing"]; ok && n.NUMA != nil && n.NUMA.Balancing.Set {
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Conflicting settings",
			Detail:   fmt.Sprintf("sysctl sets kernel.numa_balancing and numa { balancing } at %s sets it too. Keep numa { balancing } and remove the sysctl.", n.NUMA.Balancing.Range),
			Subject:  s.Range.Ptr(),
		})
	}
	diags = append(diags, conflictingKernelArgs(n)...)
	diags = append(diags, kernelArgsTooLong(n)...)
	// hugepages { } reserves pages through vm.nr_hugepages in its own
	// sysctl file, which is read after the sysctl attribute's.
	if s, ok := n.Sysctl["vm.nr_hugepages"]; ok && n.Hugepages != nil {
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Conflicting settings",
			Detail:   fmt.Sprintf("sysctl sets vm.nr_hugepages and the hugepages block at %s reserves huge pages too. Keep the hugepages block and remove the sysctl.", n.Hugepages.DeclRange),
			Subject:  s.Range.Ptr(),
		})
	}
	// gres.conf lines are the hardware description written for slurmd:
	// without one there is nothing to write (AutoDetect reads NVML).
	if _, hw := content.Attributes["hardware"]; !hw && n.Slurm != nil && n.Slurm.GRES.V && !n.Slurm.GRESAutodetect.Set {
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "gres needs the node's hardware",
			Detail:   "gpuform writes gres.conf from the hardware description (GPU model and count, NVLinks) and the numa binds. Add hardware = module.<profile>.hardware to the node, or let slurmd find the GPUs with gres_autodetect = \"nvml\".",
			Subject:  n.Slurm.GRES.Range.Ptr(),
		})
	}
	// Beside an error in the node, the warning would only be noise.
	if _, hw := content.Attributes["hardware"]; !hw && !diags.HasErrors() {
		diags = append(diags, topologyUnchecked(n)...)
	}
	return n, diags
}

// MaxKernelArgs bounds the kernel arguments of one node, joined by spaces.
// The whole kernel command line may be 2048 bytes on x86 (COMMAND_LINE_SIZE
// in arch/x86/include/asm/setup.h, https://github.com/torvalds/linux/blob/master/arch/x86/include/asm/setup.h);
// the kernel truncates a longer one silently, dropping the arguments at its
// end, and the distribution's own (root=, ro, quiet) need room too.
const MaxKernelArgs = 1024

// kernelArgsTooLong reports kernel arguments longer than MaxKernelArgs.
func kernelArgsTooLong(n *Node) hcl.Diagnostics {
	total := 0
	for i, a := range n.KernelArgs {
		total += len(a.V)
		if i > 0 {
			total++
		}
		if total > MaxKernelArgs {
			return hcl.Diagnostics{{
				Severity: hcl.DiagError,
				Summary:  "Kernel arguments too long",
				Detail:   fmt.Sprintf("The kernel arguments come to %d bytes by this one, which exceeds the limit of %d; the kernel command line is at most 2048 bytes on x86 and longer ones are cut off silently.", total, MaxKernelArgs),
				Subject:  a.Range.Ptr(),
			}}
		}
	}
	return nil
}

// singleValuedKernelArgs are kernel parameters that take one value, so
// giving two is a contradiction. Many others may repeat on purpose
// (console=, hugepagesz= with hugepages= per size, rd.* options), so only
// these are checked.
var singleValuedKernelArgs = map[string]bool{
	"iommu": true, "intel_iommu": true, "amd_iommu": true, "default_hugepagesz": true,
	"transparent_hugepage": true, "numa_balancing": true, "pcie_aspm": true, "mitigations": true,
	"processor.max_cstate": true, "intel_idle.max_cstate": true, "intel_pstate": true, "init_on_alloc": true,
}

// conflictingKernelArgs reports a single-valued kernel argument given twice
// with different values (the kernel keeps one, so the spec would claim
// both), and a default_hugepagesz when a 1 GiB hugepages block sets it.
func conflictingKernelArgs(n *Node) hcl.Diagnostics {
	var diags hcl.Diagnostics
	seen := map[string]Attr[string]{}
	for _, a := range n.KernelArgs {
		key, _, _ := strings.Cut(a.V, "=")
		if !singleValuedKernelArgs[key] {
			continue
		}
		if prev, ok := seen[key]; ok && prev.V != a.V {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Conflicting kernel arguments",
				Detail:   fmt.Sprintf("%s contradicts %s at %s; the kernel keeps only one of them.", a.Show(), prev.Show(), prev.Range),
				Subject:  a.Range.Ptr(),
			})
			continue
		}
		seen[key] = a
	}
	if a, ok := seen["default_hugepagesz"]; ok && n.Hugepages != nil && n.Hugepages.Size.Set && n.Hugepages.Size.V.Bytes == 1<<30 {
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Conflicting settings",
			Detail:   fmt.Sprintf("The hugepages block at %s reserves 1 GiB pages on the kernel command line and sets default_hugepagesz=1G itself; remove %s from kernel_args.", n.Hugepages.DeclRange, a.Show()),
			Subject:  a.Range.Ptr(),
		})
	}
	return diags
}

func filterPattern(diags *hcl.Diagnostics, in []Attr[string], re *lazyre.Regexp, summary, hint string) []Attr[string] {
	var out []Attr[string]
	for _, a := range in {
		if !re.MatchString(a.V) {
			*diags = append(*diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  summary,
				Detail:   fmt.Sprintf("%s is not accepted. %s", a.Show(), hint),
				Subject:  a.Range.Ptr(),
			})
			continue
		}
		out = append(out, a)
	}
	return out
}

func blockDecoder(blk *hcl.Block, schema *hcl.BodySchema, ctx *hcl.EvalContext) (*attrDecoder, *hcl.BodyContent) {
	content, diags := blk.Body.Content(schema)
	return &attrDecoder{ctx: ctx, attrs: content.Attributes, block: blk.DefRange, diags: diags, schema: schema}, content
}

func decodeDriver(blk *hcl.Block, ctx *hcl.EvalContext) (*Driver, hcl.Diagnostics) {
	dec, _ := blockDecoder(blk, driverSchema, ctx)
	d := &Driver{DeclRange: blk.DefRange}
	d.Version = dec.version("version")
	d.KernelModule = enumOf(dec, "kernel_module", KernelOpen, KernelProprietary)
	d.PersistenceMode = dec.bool("persistence_mode")
	d.FabricManager = dec.bool("fabric_manager")
	d.Peermem = dec.bool("peermem")
	d.IMEX = dec.bool("imex")
	return d, dec.diags
}

func decodeComponent(blk *hcl.Block, ctx *hcl.EvalContext) (*VersionedBlock, hcl.Diagnostics) {
	dec, _ := blockDecoder(blk, componentSchema, ctx)
	return &VersionedBlock{Version: dec.version("version"), DeclRange: blk.DefRange}, dec.diags
}

func decodeContainer(blk *hcl.Block, ctx *hcl.EvalContext) (*Container, hcl.Diagnostics) {
	dec, _ := blockDecoder(blk, containerSchema, ctx)
	c := &Container{DeclRange: blk.DefRange}
	c.Runtime = dec.enum("runtime", "docker", "containerd", "enroot", "apptainer")
	c.NvidiaContainerToolkit = dec.version("nvidia_container_toolkit")
	c.DefaultRuntime = dec.bool("default_runtime")
	c.CDI = dec.bool("cdi")
	enrootPath := func(name string) Attr[string] {
		a := dec.string(name)
		if a.Set && !enrootPathPattern.MatchString(a.V) {
			dec.diags = append(dec.diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid enroot path",
				Detail:   fmt.Sprintf("%s = %s is not accepted: write an absolute path, per user with $(id -u) or ${UID} as enroot's examples do (\"/raid/enroot/data/user-$(id -u)\").", name, a.Show()),
				Subject:  a.Range.Ptr(),
			})
			return Attr[string]{}
		}
		return a
	}
	c.EnrootCachePath = enrootPath("enroot_cache_path")
	c.EnrootDataPath = enrootPath("enroot_data_path")
	c.EnrootRestrictDev = dec.bool("enroot_restrict_dev")
	c.Pyxis = dec.bool("pyxis")
	decodeRuntimePackages(dec, c)
	if c.Runtime.V != "enroot" {
		for _, a := range []struct {
			name string
			set  bool
			rng  hcl.Range
		}{{"enroot_cache_path", c.EnrootCachePath.Set, c.EnrootCachePath.Range}, {"enroot_data_path", c.EnrootDataPath.Set, c.EnrootDataPath.Range}, {"enroot_restrict_dev", c.EnrootRestrictDev.Set, c.EnrootRestrictDev.Range}, {"pyxis", c.Pyxis.Set, c.Pyxis.Range}} {
			if a.set {
				dec.diags = append(dec.diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Setting of another runtime",
					Detail:   fmt.Sprintf("%s configures enroot; this container block's runtime is %q. Set runtime = \"enroot\" or remove it.", a.name, c.Runtime.V),
					Subject:  a.rng.Ptr(),
				})
			}
		}
	}
	c.Apptainer = decodeApptainer(dec, c.Runtime)
	c.DefaultShmSize = dec.size("default_shm_size", false)
	ul, rng := dec.stringMap("ulimits")
	c.UlimitsRange = rng
	if ul != nil {
		c.Ulimits = map[string]Attr[Size]{}
	}
	for _, k := range slices.Sorted(maps.Keys(ul)) {
		a := ul[k]
		if !contains(ulimitNames, k) {
			dec.diags = append(dec.diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Unknown ulimit",
				Detail:   fmt.Sprintf("%q is not a ulimit gpuform manages; use one of %s.%s", k, quoteList(ulimitNames), didYouMeanSuffix(k, ulimitNames)),
				Subject:  a.Range.Ptr(),
			})
			continue
		}
		var sz Size
		var err error
		if k == "nofile" || k == "nproc" {
			// Counts, not sizes: no unit suffixes.
			sz, err = parseCount(a.V)
		} else {
			sz, err = ParseSize(a.V)
			if err == nil && sz.IsPercent() {
				err = fmt.Errorf("a percentage is not a ulimit")
			}
		}
		if err != nil {
			if a.Sensitive {
				err = fmt.Errorf("%s is not a size or a count", Redacted)
			}
			dec.diags = append(dec.diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid ulimit",
				Detail:   fmt.Sprintf("ulimit %s: %s.", k, err),
				Subject:  a.Range.Ptr(),
			})
			continue
		}
		c.Ulimits[k] = Attr[Size]{V: sz, Set: true, Range: a.Range, Sensitive: a.Sensitive}
	}
	c.Images, _ = dec.stringList("images")
	c.Images = filterPattern(&dec.diags, c.Images, imagePattern, "Invalid container image", "Images are written like \"nvcr.io/nvidia/pytorch:24.05-py3\".")
	c.ImageDir = decodeImageDir(dec, c.Runtime.V)
	c.ImageDirShared = dec.bool("image_dir_shared")
	c.ContainerdRuntimeOptions, _ = dec.stringMap("containerd_runtime_options")
	for k, a := range c.ContainerdRuntimeOptions {
		switch {
		case c.Runtime.V != "containerd":
			dec.diags = append(dec.diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Setting of another runtime",
				Detail:   fmt.Sprintf("containerd_runtime_options sets the options of containerd's nvidia runtime; this container block's runtime is %q. Set runtime = \"containerd\", or remove it.", c.Runtime.V),
				Subject:  a.Range.Ptr(),
			})
			c.ContainerdRuntimeOptions = nil
		case !runtimeOptionKey.MatchString(k) || k == "BinaryName":
			dec.diags = append(dec.diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid runtime option",
				Detail:   fmt.Sprintf("containerd_runtime_options key %q is not accepted: write an option of runc's shim (SystemdCgroup, NoNewKeyring, Root, …) in letters and digits; BinaryName is gpuform's (the NVIDIA runtime's binary).", k),
				Subject:  a.Range.Ptr(),
			})
			delete(c.ContainerdRuntimeOptions, k)
		}
		if c.ContainerdRuntimeOptions == nil {
			break
		}
	}
	if c.ImageDirShared.Set && !c.ImageDir.Set {
		dec.diags = append(dec.diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Setting without its directory",
			Detail:   "image_dir_shared says that image_dir is shared storage; set image_dir too, or remove image_dir_shared.",
			Subject:  c.ImageDirShared.Range.Ptr(),
		})
	}
	return c, dec.diags
}

// runtimeOptionKey is a containerd runtime option's name (runc's shim
// options are CamelCase Go field names).
var runtimeOptionKey = lazyre.New(`^[A-Za-z][A-Za-z0-9]{0,63}$`)

// ncclIBHCAPattern and ncclSocketIfnamePattern are what an entry of
// NCCL_IB_HCA and the value of NCCL_SOCKET_IFNAME may be.
var (
	ncclIBHCAPattern        = lazyre.New(`^[=^]?[a-zA-Z0-9_.\-]{1,32}(:[0-9]{1,2})?$`)
	ncclSocketIfnamePattern = lazyre.New(`^[=^]?[a-zA-Z0-9_.\-,]{1,64}$`)
)

func parseCount(s string) (Size, error) {
	if s == "unlimited" || s == "-1" {
		return Size{Unlimited: true}, nil
	}
	n, err := strconv.ParseUint(s, 10, 63)
	if err != nil {
		return Size{}, fmt.Errorf("%q is not a whole number or \"unlimited\"", s)
	}
	return Size{Bytes: n}, nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

func decodeShm(blk *hcl.Block, ctx *hcl.EvalContext) (*Shm, hcl.Diagnostics) {
	dec, _ := blockDecoder(blk, shmSchema, ctx)
	return &Shm{Size: dec.size("size", true), DeclRange: blk.DefRange}, dec.diags
}

func decodeNUMA(blk *hcl.Block, ctx *hcl.EvalContext) (*NUMA, hcl.Diagnostics) {
	dec, content := blockDecoder(blk, numaSchema, ctx)
	n := &NUMA{DeclRange: blk.DefRange}
	n.Balancing = dec.bool("balancing")
	for _, bb := range content.Blocks {
		bd, _ := blockDecoder(bb, numaBindSchema, ctx)
		bind := &NUMABind{DeclRange: bb.DefRange}
		bind.GPUs, _ = bd.intList("gpus", 0, 1023)
		bind.Node = bd.int("node", 0, 1023)
		dec.diags = append(dec.diags, bd.diags...)
		n.Binds = append(n.Binds, bind)
	}
	return n, dec.diags
}

func decodeAffinity(blk *hcl.Block, ctx *hcl.EvalContext) (*Affinity, hcl.Diagnostics) {
	dec, _ := blockDecoder(blk, affinitySchema, ctx)
	a := &Affinity{DeclRange: blk.DefRange}
	m, rng := dec.stringMap("gpu_nic")
	a.GPUNICRange = rng
	if m != nil {
		a.GPUNIC = map[int]Attr[string]{}
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		idx, err := strconv.Atoi(k)
		if err != nil || idx < 0 || idx > 1023 {
			dec.diags = append(dec.diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid GPU index",
				Detail:   fmt.Sprintf("gpu_nic keys are GPU indexes (0, 1, …); %q is not one.", k),
				Subject:  m[k].Range.Ptr(),
			})
			continue
		}
		if !deviceNamePattern.MatchString(m[k].V) {
			dec.diags = append(dec.diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid NIC name",
				Detail:   fmt.Sprintf("%s is not a device name like \"mlx5_0\".", m[k].Show()),
				Subject:  m[k].Range.Ptr(),
			})
			continue
		}
		a.GPUNIC[idx] = m[k]
	}
	a.NCCLEnv = dec.bool("nccl_env")
	a.NCCLIBHCA, _ = dec.stringList("nccl_ib_hca")
	a.NCCLIBHCA = filterPattern(&dec.diags, a.NCCLIBHCA, ncclIBHCAPattern, "Invalid NCCL_IB_HCA entry", "Entries look like \"mlx5_0\" or \"mlx5_0:1\".")
	a.NCCLSocketIfname = dec.string("nccl_socket_ifname")
	a.NCCLTopoFile = dec.bool("nccl_topo_file")
	a.NICIRQAffinity = dec.bool("nic_irq_affinity")
	mtus, rng := dec.stringMap("mtu")
	a.MTURange = rng
	for _, k := range slices.Sorted(maps.Keys(mtus)) {
		v := mtus[k]
		if !deviceNamePattern.MatchString(k) {
			dec.diags = append(dec.diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid NIC name",
				Detail:   fmt.Sprintf("mtu keys are RDMA device names like \"mlx5_0\", as in gpu_nic; %q is not one.", k),
				Subject:  v.Range.Ptr(),
			})
			continue
		}
		// 576 is the least MTU IPv4 hosts must accept (RFC 791); 65520 the
		// largest IPoIB allows, in connected mode.
		m, err := strconv.Atoi(v.V)
		if err != nil || m < 576 || m > 65520 {
			dec.diags = append(dec.diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid MTU",
				Detail:   fmt.Sprintf("%s is not an MTU from 576 to 65520: RoCE links commonly use 4200 or 9000, IPoIB 2044 or 4092 (datagram mode) or up to 65520 (connected mode).", v.Show()),
				Subject:  v.Range.Ptr(),
			})
			continue
		}
		if a.MTU == nil {
			a.MTU = map[string]Attr[int]{}
		}
		a.MTU[k] = Attr[int]{V: m, Set: true, Range: v.Range}
	}
	if a.NCCLSocketIfname.Set && !ncclSocketIfnamePattern.MatchString(a.NCCLSocketIfname.V) {
		dec.diags = append(dec.diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid NCCL_SOCKET_IFNAME",
			Detail:   fmt.Sprintf("%s is not an interface list like \"eth0\" or \"^docker,lo\".", a.NCCLSocketIfname.Show()),
			Subject:  a.NCCLSocketIfname.Range.Ptr(),
		})
		a.NCCLSocketIfname = Attr[string]{Range: a.NCCLSocketIfname.Range}
	}
	return a, dec.diags
}

func decodeHugepages(blk *hcl.Block, ctx *hcl.EvalContext) (*Hugepages, hcl.Diagnostics) {
	dec, _ := blockDecoder(blk, hugepagesSchema, ctx)
	h := &Hugepages{DeclRange: blk.DefRange}
	h.Size = dec.size("size", false)
	if h.Size.Set && h.Size.V.Bytes != 2<<20 && h.Size.V.Bytes != 1<<30 {
		dec.diags = append(dec.diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid huge page size",
			Detail:   "x86-64 and Arm64 Linux offer \"2MiB\" and \"1GiB\" huge pages.",
			Subject:  h.Size.Range.Ptr(),
		})
		h.Size.Set = false
	}
	h.Count = dec.int("count", 0, 1<<30)
	return h, dec.diags
}

func decodeVerify(blk *hcl.Block, ctx *hcl.EvalContext) (*Verify, hcl.Diagnostics) {
	dec, content := blockDecoder(blk, verifySchema, ctx)
	v := &Verify{DeclRange: blk.DefRange}
	v.Optional = decodeOptional(dec)
	v.Isolation = enumOf(dec, "isolation", IsolationOnFailure, IsolationAlways, IsolationOff)
	v.Outliers = enumOf(dec, "outliers", OutliersWarn, OutliersFail, OutliersOff)
	v.OutlierMarginPercent = dec.float("outlier_margin_percent", 1, 50)
	names := map[string]hcl.Range{}
	for _, bb := range content.Blocks {
		switch bb.Type {
		case "nvml":
			if v.NVML != nil {
				dec.diags = append(dec.diags, duplicateDiag("nvml", "", bb.DefRange, v.NVML.DeclRange))
				continue
			}
			nd, _ := blockDecoder(bb, nvmlSchema, ctx)
			v.NVML = &VerifyNVML{DeclRange: bb.DefRange}
			v.NVML.GPUs = nd.int("gpus", 0, 1024)
			v.NVML.ECC = nd.bool("ecc")
			v.NVML.MinPCIeGen = nd.int("min_pcie_gen", 1, 7)
			v.NVML.MinPCIeWidth = nd.int("min_pcie_width", 1, 32)
			v.NVML.NVLink = nd.enum("nvlink", "all_active", "none")
			v.NVML.MaxTemperatureC = nd.int("max_temperature_c", 20, 120)
			v.NVML.MIG = nd.enum("mig", MIGEnabled, MIGDisabled)
			dec.diags = append(dec.diags, nd.diags...)
		case "burnin":
			if v.Burnin != nil {
				dec.diags = append(dec.diags, duplicateDiag("burnin", "", bb.DefRange, v.Burnin.DeclRange))
				continue
			}
			var diags hcl.Diagnostics
			v.Burnin, diags = decodeBurnin(bb, ctx)
			dec.diags = append(dec.diags, diags...)
		case "kubernetes":
			if v.Kubernetes != nil {
				dec.diags = append(dec.diags, duplicateDiag("kubernetes", "", bb.DefRange, v.Kubernetes.DeclRange))
				continue
			}
			var diags hcl.Diagnostics
			v.Kubernetes, diags = decodeKubernetes(bb, ctx)
			dec.diags = append(dec.diags, diags...)
		case "nccl_test":
			name := bb.Labels[0]
			if prev, dup := names[name]; dup {
				dec.diags = append(dec.diags, duplicateDiag("nccl_test", name, bb.LabelRanges[0], prev))
				continue
			}
			names[name] = bb.DefRange
			td, _ := blockDecoder(bb, ncclTestSchema, ctx)
			t := &NCCLTest{Name: name, DeclRange: bb.DefRange}
			t.Command = td.string("command")
			if t.Command.Set && !ncclCommandPattern.MatchString(t.Command.V) {
				td.diags = append(td.diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Invalid nccl-tests command",
					Detail:   "The command may contain only the program name and its arguments (letters, digits, spaces and - _ . / = ,); shell syntax such as ; | $ or quotes is refused because the command runs on the node.",
					Subject:  t.Command.Range.Ptr(),
				})
				t.Command.Set = false
			}
			t.MinBusBWGbps = td.float("min_busbw_gbps", 0, 100000)
			t.MultiNode = td.bool("multi_node")
			if d := ownHostsDiag(t); d != nil {
				td.diags = append(td.diags, d)
			}
			t.Network = td.enum("network", NCCLNetworks()...)
			timeout := td.string("timeout")
			var ok bool
			if t.Timeout, ok = durationAttr(timeout, 1, math.MaxInt64); !ok {
				td.diags = append(td.diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Invalid timeout",
					Detail:   fmt.Sprintf("%s is not a duration like \"90s\" or \"10m\".", timeout.Show()),
					Subject:  timeout.Range.Ptr(),
				})
			}
			dec.diags = append(dec.diags, td.diags...)
			v.NCCLTests = append(v.NCCLTests, t)
		}
	}
	return v, dec.diags
}

// decodeBurnin reads verify { burnin }: how long the burn-in tier's
// sustained load runs and how long a passed burn-in qualifies the node.
// Each bad value is an error at its own line.
func decodeBurnin(blk *hcl.Block, ctx *hcl.EvalContext) (*VerifyBurnin, hcl.Diagnostics) {
	dec, _ := blockDecoder(blk, burninSchema, ctx)
	b := &VerifyBurnin{DeclRange: blk.DefRange}
	read := func(name string, lo, hi time.Duration, example string) Attr[Duration] {
		a := dec.string(name)
		d, ok := durationAttr(a, lo, hi)
		if !ok {
			dec.diags = append(dec.diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid burnin " + name,
				Detail:   fmt.Sprintf("%s is not a duration from %s to %s like %q.", a.Show(), lo, hi, example),
				Subject:  a.Range.Ptr(),
			})
		}
		return d
	}
	b.Duration = read("duration", time.Minute, 7*24*time.Hour, "4h")
	b.MaxAge = read("max_age", time.Hour, 366*24*time.Hour, "720h")
	if b.Duration.Set && b.MaxAge.Set && b.MaxAge.V.D <= b.Duration.V.D {
		dec.diags = append(dec.diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid burnin max_age",
			Detail:   fmt.Sprintf("max_age %s is not longer than the burn-in's duration %s: a burn-in would expire before it finished.", b.MaxAge.V.Text, b.Duration.V.Text),
			Subject:  b.MaxAge.Range.Ptr(),
		})
	}
	return b, dec.diags
}

// decodeOptional reads verify's optional list: the tools a tier runs that
// this spec lets a node lack. Without it a tier that cannot run its tool
// fails the gate, so an unknown word is an error rather than ignored.
func decodeOptional(dec *attrDecoder) []Attr[VerifyTool] {
	list, _ := dec.stringList("optional")
	words := make([]string, len(VerifyTools()))
	for i, t := range VerifyTools() {
		words[i] = string(t)
	}
	var out []Attr[VerifyTool]
	seen := map[VerifyTool]hcl.Range{}
	for _, a := range list {
		t := VerifyTool(a.V)
		if !slices.Contains(VerifyTools(), t) {
			dec.diags = append(dec.diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  `Invalid value in "optional"`,
				Detail:   fmt.Sprintf("%s is not one of %s.%s", a.Show(), quoteList(words), didYouMeanSuffixIf(!a.Sensitive, a.V, words)),
				Subject:  a.Range.Ptr(),
			})
			continue
		}
		if prev, dup := seen[t]; dup {
			dec.diags = append(dec.diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  `Duplicate value in "optional"`,
				Detail:   fmt.Sprintf("%s is already listed at %s.", a.Show(), prev),
				Subject:  a.Range.Ptr(),
			})
			continue
		}
		seen[t] = a.Range
		out = append(out, Attr[VerifyTool]{V: t, Set: true, Range: a.Range, Sensitive: a.Sensitive})
	}
	return out
}

func decodeRollout(blk *hcl.Block, ctx *hcl.EvalContext) (*Rollout, hcl.Diagnostics) {
	dec, _ := blockDecoder(blk, rolloutSchema, ctx)
	r := &Rollout{DeclRange: blk.DefRange}
	r.Batch = dec.int("batch", 1, 100000)
	r.MaxFailures = dec.int("max_failures", 0, 100000)
	r.Drain = enumOf(dec, "drain", DrainSlurm, DrainNone)
	r.Reboot = enumOf(dec, "reboot", RebootAllow, RebootNever, RebootSlurm)
	r.Unit = enumOf(dec, "unit", RolloutUnitHost, RolloutUnitNVLinkDomain)
	stepTimeout := dec.string("step_timeout")
	decodeSlurmRollout(dec, r)
	var d *hcl.Diagnostic
	if r.StepTimeout, d = checkTimeout(stepTimeout, "step_timeout", "30m"); d != nil {
		dec.diags = append(dec.diags, d)
	}
	// The rollout is printed in every plan and in apply's progress.
	if r.Batch.Sensitive || r.MaxFailures.Sensitive || r.Unit.Sensitive || r.Drain.Sensitive || r.Reboot.Sensitive || r.StepTimeout.Sensitive || r.slurmSensitive() {
		dec.diags = append(dec.diags, sensitiveNotAllowedDiag("A rollout setting", blk.DefRange))
	}
	return r, dec.diags
}

// hostsFromValue accepts what a node's hosts attribute may hold: an
// inventory, a host pattern, or a list mixing both.
func hostsFromValue(v cty.Value, expr hcl.Expression) ([]Host, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	rng := expr.Range()
	if !v.IsWhollyKnown() {
		return nil, nil
	}
	v, sens := unmarkAll(v)
	if sens {
		return nil, hcl.Diagnostics{sensitiveNotAllowedDiag("A host name", rng)}
	}
	if v.IsNull() {
		return nil, hcl.Diagnostics{typeDiag("hosts", "an inventory or a list of hosts", rng)}
	}
	var items []cty.Value
	var ranges []hcl.Range
	ty := v.Type()
	switch {
	case ty.IsObjectType() || ty == cty.String:
		items = []cty.Value{v}
		ranges = []hcl.Range{rng}
	case ty.IsTupleType() || ty.IsListType() || ty.IsSetType():
		items = v.AsValueSlice()
		ranges = elementRanges(expr)
	default:
		return nil, hcl.Diagnostics{typeDiag("hosts", "an inventory or a list of hosts", rng)}
	}
	var out []Host
	seen := map[string]bool{}
	add := func(h Host) {
		if seen[h.Name] {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Duplicate host",
				Detail:   fmt.Sprintf("Host %q appears more than once in this node's hosts.", h.Name),
				Subject:  h.Range.Ptr(),
			})
			return
		}
		seen[h.Name] = true
		out = append(out, h)
	}
	for i, it := range items {
		r := pick(ranges, i, rng)
		if it.Type().IsObjectType() && it.Type().HasAttribute("hosts") && it.Type().HasAttribute("name") {
			inv := func(k string) string {
				if !it.Type().HasAttribute(k) {
					return ""
				}
				x := it.GetAttr(k)
				if x.IsNull() || !x.Type().Equals(cty.String) {
					return ""
				}
				return x.AsString()
			}
			port := 0
			// An object written as an inventory may leave port out.
			if it.Type().HasAttribute("port") {
				if p := it.GetAttr("port"); p.Type() == cty.Number && !p.IsNull() {
					port, _ = wholeNumber(p)
				}
			}
			// An inventory's probe_timeout was checked when it was decoded
			// (an invalid one reads ""); an object written as one is
			// checked here.
			var probe Duration
			if text := inv("probe_timeout"); text != "" {
				var err error
				if probe, err = ParseTimeout(text); err != nil {
					diags = append(diags, &hcl.Diagnostic{
						Severity: hcl.DiagError,
						Summary:  "Invalid probe_timeout",
						Detail:   fmt.Sprintf("%s like \"2m\".", err),
						Subject:  r.Ptr(),
					})
				}
			}
			for _, hv := range it.GetAttr("hosts").AsValueSlice() {
				add(Host{Name: hv.AsString(), User: inv("user"), Port: port, Jump: inv("jump"), Become: inv("become"), ProbeTimeout: probe.D, Inventory: inv("name"), Range: r})
			}
			continue
		}
		s, err := convert.Convert(it, cty.String)
		if err != nil || s.IsNull() {
			diags = append(diags, typeDiag("hosts", "an inventory or a host name", r))
			continue
		}
		names, perr := ExpandHostPattern(s.AsString())
		if perr != nil {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid host pattern",
				Detail:   perr.Error() + ".",
				Subject:  r.Ptr(),
			})
			continue
		}
		for _, name := range names {
			add(Host{Name: name, Range: r})
		}
	}
	if len(out) == 0 && len(diags) == 0 {
		diags = append(diags, emptyHostsDiag(rng))
	}
	return out, diags
}

// maxTimeout is the longest step or probe timeout a spec may set: a limit
// beyond a day is no limit, and time.Duration arithmetic stays far from
// overflow.
const maxTimeout = 24 * time.Hour

// checkTimeout parses a timeout attribute such as step_timeout: a Go
// duration between 1s and maxTimeout (ParseTimeout). An invalid one is
// returned unset with its diagnostic; an unset one is returned unset.
func checkTimeout(a Attr[string], name, example string) (Attr[Duration], *hcl.Diagnostic) {
	out := Attr[Duration]{Range: a.Range, Sensitive: a.Sensitive}
	if !a.Set {
		return out, nil
	}
	d, err := ParseTimeout(a.V)
	if err != nil {
		return out, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid " + name,
			Detail:   fmt.Sprintf("%s like %q.", err, example),
			Subject:  a.Range.Ptr(),
		}
	}
	out.V, out.Set = d, true
	return out, nil
}

// ownHostsDiag refuses a multi-node nccl_test whose launcher chooses its
// own hosts (mpirun -H/--hostfile, srun -w/--nodelist): a multi-node test
// runs once per node group on the hosts of its node block — verify hands
// them to the launcher, judges the run on each of them and isolates a bad
// one pairwise over the same hosts — so a host list of the command's own
// would leave hosts of the group out of the run while verify reported them
// passed. With multi_node = false the command is a per-host test and runs
// as written (lint's nccl_multi_node_per_host warns about that).
func ownHostsDiag(t *NCCLTest) *hcl.Diagnostic {
	if !t.Command.Set || (t.MultiNode.Set && !t.MultiNode.V) {
		return nil
	}
	opt, value, ok := cmdline.HostList(t.Command.V)
	if !ok {
		return nil
	}
	if len(value) > 40 {
		value = value[:40] + "…"
	}
	what := "hosts"
	if cmdline.IsHostFile(opt) {
		what = "hosts from a file"
	}
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Multi-node nccl_test names its own hosts",
		Detail: fmt.Sprintf("nccl_test %q chooses its %s (%s %s), but a multi-node test runs on the hosts of its node block: verify passes them to %s (with the ranks per node the command gives), judges the run on every one of them and isolates a slow one pairwise. Remove %s and list the hosts in the node block's hosts; a test on part of a group goes in a node block of its own.",
			t.Name, what, opt, value, cmdline.Launcher(t.Command.V), opt),
		Subject: t.Command.Range.Ptr(),
	}
}
