// Package importer writes the spec of what a node runs today: a node block
// whose every value comes from the node's facts, so an operator adopting
// gpuform on an existing fleet starts from the truth and plan shows drift
// from it. It reads facts only; it reaches no host and judges nothing.
package importer

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"

	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/lockfile"
	"github.com/gpuform/gpuform/provision/resource"
	"github.com/gpuform/gpuform/spec"
)

// Options say where the node was read from.
type Options struct {
	// Name is the node block's label.
	Name string
	// Host is the host as the spec will list it, with its connection
	// settings (written as an inventory when any is set).
	Host spec.Host
	// Now stamps the header comment.
	Now time.Time
	// KB is the knowledge base that names the GPUs on the PCI bus.
	KB *kb.KB
}

// kernelArgsOfInterest are the kernel arguments GPU tuning depends on;
// import writes those the node has and leaves the rest (root=, quiet, …)
// to the distribution.
var kernelArgsOfInterest = []string{"iommu", "intel_iommu", "amd_iommu", "default_hugepagesz", "hugepagesz", "hugepages", "pci", "pcie_aspm", "processor.max_cstate", "intel_idle.max_cstate"}

// Spec renders the node block (and its inventory) describing f.
func Spec(f *facts.Node, o Options) []byte {
	file := hclwrite.NewEmptyFile()
	root := file.Body()
	root.AppendUnstructuredTokens(comment(fmt.Sprintf("# Written by gpuform import from %s on %s: what the node runs now.\n# Review it, then keep what you want gpuform to hold the node to.\n", o.Host.Name, o.Now.UTC().Format("2006-01-02"))))

	hostsExpr := hclwrite.TokensForValue(cty.ListVal([]cty.Value{cty.StringVal(o.Host.Name)}))
	if o.Host.User != "" || o.Host.Port != 0 || o.Host.Jump != "" || o.Host.Become != "" {
		inv := root.AppendNewBlock("inventory", []string{o.Name}).Body()
		inv.SetAttributeValue("hosts", cty.ListVal([]cty.Value{cty.StringVal(o.Host.Name)}))
		setIf(inv, "user", o.Host.User)
		if o.Host.Port != 0 {
			inv.SetAttributeValue("port", cty.NumberIntVal(int64(o.Host.Port)))
		}
		setIf(inv, "jump", o.Host.Jump)
		setIf(inv, "become", o.Host.Become)
		root.AppendNewline()
		hostsExpr = hclwrite.TokensForTraversal(traversal("inventory", o.Name))
	}

	node := root.AppendNewBlock("node", []string{o.Name}).Body()
	node.SetAttributeRaw("hosts", hostsExpr)
	if hw, ok := hardware(o.KB, f); ok {
		node.SetAttributeRaw("hardware", hw)
		node.AppendNewline()
	} else {
		node.AppendUnstructuredTokens(comment(hardwareComment(f)))
	}

	any := spec.Version{}
	if f.Driver == nil && lockfile.Installed(o.KB, f, spec.ComponentDriver, any) == "" {
		node.AppendUnstructuredTokens(comment("# no NVIDIA driver found\n"))
	}
	if f.Driver != nil || lockfile.Installed(o.KB, f, spec.ComponentDriver, any) != "" {
		node.AppendNewline()
		d := node.AppendNewBlock("driver", nil).Body()
		// The loaded driver is what the GPUs run; a newer installed one
		// waits for a reboot.
		v := lockfile.Installed(o.KB, f, spec.ComponentDriver, any)
		if f.Driver != nil && f.Driver.Version != "" {
			v = f.Driver.Version
		}
		d.SetAttributeValue("version", cty.StringVal(v))
		if f.Driver != nil && f.Driver.Flavor != "" {
			d.SetAttributeValue("kernel_module", cty.StringVal(f.Driver.Flavor))
		}
		d.SetAttributeValue("persistence_mode", cty.BoolVal(running(f, "nvidia-persistenced.service")))
		d.SetAttributeValue("fabric_manager", cty.BoolVal(running(f, "nvidia-fabricmanager.service")))
		d.SetAttributeValue("peermem", cty.BoolVal(f.HasModule("nvidia_peermem")))
	}
	for _, c := range []struct {
		block string
		comp  spec.Component
		what  string
	}{{"cuda", spec.ComponentCUDA, "CUDA toolkit"}, {"nccl", spec.ComponentNCCL, "NCCL"}, {"dcgm", spec.ComponentDCGM, "DCGM"}} {
		v := lockfile.Installed(o.KB, f, c.comp, any)
		if v == "" {
			// Said, so that a reader of the spec knows import looked.
			node.AppendUnstructuredTokens(comment("# no " + c.what + " found\n"))
		}
		if v != "" {
			if c.comp == spec.ComponentCUDA {
				v = defaultCUDA(f, v)
			}
			node.AppendNewline()
			node.AppendNewBlock(c.block, nil).Body().SetAttributeValue("version", cty.StringVal(v))
		}
	}
	tk := lockfile.Installed(o.KB, f, spec.ComponentContainerToolkit, any)
	switch {
	case tk == "" && !f.Docker.Present:
		node.AppendUnstructuredTokens(comment("# no container runtime or NVIDIA Container Toolkit found\n"))
	case tk == "":
		node.AppendUnstructuredTokens(comment("# no NVIDIA Container Toolkit found\n"))
	}
	if tk != "" || f.Docker.Present {
		node.AppendNewline()
		c := node.AppendNewBlock("container", nil).Body()
		if f.Docker.Present || running(f, "docker.service") {
			c.SetAttributeValue("runtime", cty.StringVal("docker"))
		}
		setIf(c, "nvidia_container_toolkit", tk)
		if f.Docker.Present {
			c.SetAttributeValue("default_runtime", cty.BoolVal(f.Docker.DefaultRuntime() == "nvidia"))
			if sz := f.Docker.ShmSize(); sz != "" {
				if parsed, err := spec.ParseSize(sz); err == nil {
					c.SetAttributeValue("default_shm_size", cty.StringVal(parsed.String()))
				}
			}
			if ul := dockerUlimits(f); len(ul) > 0 {
				c.SetAttributeValue("ulimits", cty.ObjectVal(ul))
			}
		}
	}
	if f.Shm.Mounted && !f.Shm.SizeFromDefault && f.Shm.SizeBytes > 0 {
		node.AppendNewline()
		node.AppendNewBlock("shm", nil).Body().SetAttributeValue("size", cty.StringVal(shmSize(f.Shm.SizeBytes, f.MemoryBytes)))
	}
	if v, ok := f.Sysctl("kernel.numa_balancing"); ok {
		node.AppendNewline()
		node.AppendNewBlock("numa", nil).Body().SetAttributeValue("balancing", cty.BoolVal(strings.TrimSpace(v) != "0"))
	}
	if f.HugePages.Total > 0 && f.HugePages.PageSizeBytes > 0 {
		node.AppendNewline()
		h := node.AppendNewBlock("hugepages", nil).Body()
		h.SetAttributeValue("size", cty.StringVal(spec.FormatBytes(f.HugePages.PageSizeBytes)))
		h.SetAttributeValue("count", cty.NumberUIntVal(f.HugePages.Total))
	}
	if sc := managedSysctls(f); len(sc) > 0 {
		node.AppendNewline()
		node.SetAttributeValue("sysctl", cty.ObjectVal(sc))
	}
	var args []cty.Value
	for _, a := range f.Kernel.Cmdline {
		name, _, _ := strings.Cut(a, "=")
		for _, want := range kernelArgsOfInterest {
			if name == want {
				args = append(args, cty.StringVal(a))
			}
		}
	}
	if len(f.CPU.Governors) == 1 || len(args) > 0 {
		node.AppendNewline()
	}
	if len(args) > 0 {
		node.SetAttributeValue("kernel_args", cty.ListVal(args))
	}
	if len(f.CPU.Governors) == 1 {
		node.SetAttributeValue("cpu_governor", cty.StringVal(f.CPU.Governors[0]))
	}
	return hclwrite.Format(file.Bytes())
}

// hardware describes the node's GPUs as the spec's hardware object, when
// the PCI bus shows GPUs of one model the knowledge base knows (the object
// needs its name). NVLink bridges do not show on the PCI bus, so GPUs
// without NVSwitches are written as "pcie" with a comment saying so.
func hardware(k *kb.KB, f *facts.Node) (hclwrite.Tokens, bool) {
	gpus := f.NVIDIAGPUs()
	if len(gpus) == 0 {
		return nil, false
	}
	dev, ok := k.GPUByPCIID(gpus[0].Device)
	if !ok {
		return nil, false
	}
	for _, g := range gpus {
		if g.Device != gpus[0].Device {
			return nil, false
		}
	}
	interconnect, note := "pcie", ""
	switch {
	case len(f.NVSwitches()) > 0:
		interconnect = "nvswitch"
	case len(gpus) == 1 && strings.Contains(dev.Model.Name, "Grace"):
		// A Grace superchip's GPU reaches its CPU over NVLink-C2C.
		interconnect = "nvlink_c2c"
	case dev.Model.NVLinkGBps > 0:
		note = ` # or "nvlink_bridge": bridges do not show on the PCI bus`
	}
	numaNodes := max(len(f.NUMA), 1)
	var b strings.Builder
	fmt.Fprintf(&b, "x = {\n  gpu_model = %s\n  gpu_count = %d\n  interconnect = %s%s\n", hclString(dev.Model.Name), len(gpus), hclString(interconnect), note)
	if f.CPU.Sockets > 0 {
		fmt.Fprintf(&b, "  cpu_sockets = %d\n", f.CPU.Sockets)
	}
	fmt.Fprintf(&b, "  numa_nodes = %d\n", numaNodes)
	// Listed by PCI address, the order nvidia-smi numbers them in; only
	// when every GPU's NUMA node is known (the object defaults it to 0).
	known := true
	for _, g := range gpus {
		known = known && g.NUMANode >= 0 && g.NUMANode < numaNodes
	}
	if known {
		b.WriteString("  gpus = [\n")
		for i, g := range gpus {
			fmt.Fprintf(&b, "    { index = %d, pci = %s, numa = %d },\n", i, hclString(g.Address), g.NUMANode)
		}
		b.WriteString("  ]\n")
	}
	// The RDMA NICs, so that the rules about GPUDirect RDMA and GPU-NIC
	// affinity see the ones the node has.
	var nics []string
	for _, d := range f.RDMA {
		line := fmt.Sprintf("{ name = %s", hclString(d.Name))
		if len(d.NetDevs) > 0 {
			line += ", netdev = " + hclString(d.NetDevs[0])
		}
		if pci, ok := f.PCIDevice(d.Address); ok {
			line += ", pci = " + hclString(d.Address)
			if pci.NUMANode >= 0 && pci.NUMANode < numaNodes {
				line += fmt.Sprintf(", numa = %d", pci.NUMANode)
			}
		}
		if len(d.Ports) > 0 {
			switch d.Ports[0].LinkLayer {
			case "InfiniBand":
				line += `, link = "infiniband"`
			case "Ethernet":
				line += `, link = "roce"`
			}
			var gbps int
			if _, err := fmt.Sscanf(d.Ports[0].Rate, "%d Gb/sec", &gbps); err == nil && gbps > 0 {
				line += fmt.Sprintf(", speed_gbps = %d", gbps)
			}
		}
		nics = append(nics, "    "+line+", rdma = true },\n")
	}
	if len(nics) > 0 {
		b.WriteString("  nics = [\n" + strings.Join(nics, "") + "  ]\n")
	}
	b.WriteString("}\n")
	file, diags := hclwrite.ParseConfig([]byte(b.String()), "hardware", hcl.InitialPos)
	if diags.HasErrors() {
		return nil, false
	}
	return file.Body().GetAttribute("x").Expr().BuildTokens(nil), true
}

// hclString is s as an HCL string literal, template sequences escaped.
func hclString(s string) string {
	return string(hclwrite.TokensForValue(cty.StringVal(s)).Bytes())
}

// hardwareComment says which GPUs the PCI bus shows when hardware cannot
// describe them (none, several models, or a model the knowledge base does
// not know); a node without GPUs says so.
func hardwareComment(f *facts.Node) string {
	gpus := f.NVIDIAGPUs()
	if len(gpus) == 0 {
		return "# hardware: no NVIDIA GPU found on the PCI bus (gpu_count 0)\n"
	}
	count := map[string]int{}
	var ids []string
	for _, g := range gpus {
		if count[g.Device] == 0 {
			ids = append(ids, g.Device)
		}
		count[g.Device]++
	}
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprintf("%d × device %s", count[id], id)
	}
	gpuWord := "GPUs"
	if len(gpus) == 1 {
		gpuWord = "GPU"
	}
	return fmt.Sprintf("# hardware: %d NVIDIA %s found (%s); set hardware = module.NAME.hardware\n# from a built-in hardware profile to enable the topology checks\n", len(gpus), gpuWord, strings.Join(parts, ", "))
}

// shmSize writes a /dev/shm size as a share of RAM when it is a whole
// percentage of it (tmpfs's size=50% is the common setting), so that the
// spec holds other nodes with other RAM sizes to the same intent instead
// of to this node's bytes; else as bytes.
func shmSize(size, ram uint64) string {
	if ram > 0 {
		p := (size*100 + ram/2) / ram
		// tmpfs rounds to whole pages; the shm resource allows a MiB of
		// slack for that, and so does this, as long as a MiB is well
		// under a percent of RAM.
		slack := min(uint64(1<<20), ram/1000)
		if p >= 1 && p <= 100 {
			want := ram * p / 100
			if diff := max(want, size) - min(want, size); diff <= slack {
				return fmt.Sprintf("%d%%", p)
			}
		}
	}
	return spec.FormatBytes(size)
}

// managedSysctls are the sysctls an earlier gpuform apply wrote to its
// drop-in, with the values the kernel has now. numa_balancing and
// nr_hugepages have blocks of their own.
func managedSysctls(f *facts.Node) map[string]cty.Value {
	content, ok := f.ManagedFile(resource.SysctlFile)
	if !ok {
		return nil
	}
	out := map[string]cty.Value{}
	for _, line := range strings.Split(content, "\n") {
		k, _, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" || strings.HasPrefix(k, "#") || k == "kernel.numa_balancing" || k == "vm.nr_hugepages" {
			continue
		}
		if v, ok := f.Sysctl(k); ok {
			out[k] = cty.StringVal(strings.TrimSpace(v))
		}
	}
	return out
}

// running reports whether a unit is enabled and active.
func running(f *facts.Node, unit string) bool {
	u := f.Unit(unit)
	return u.Enabled == "enabled" && u.Active == "active"
}

// defaultCUDA prefers the toolkit /usr/local/cuda points at.
func defaultCUDA(f *facts.Node, newest string) string {
	for _, t := range f.CUDAToolkits {
		if t.Default && t.Version != "" {
			return t.Version
		}
	}
	return newest
}

// dockerUlimits reads daemon.json's default-ulimits for the limits gpuform
// manages, as a spec writes them.
func dockerUlimits(f *facts.Node) map[string]cty.Value {
	raw, ok := f.Docker.Daemon["default-ulimits"].(map[string]any)
	if !ok {
		return nil
	}
	out := map[string]cty.Value{}
	names := make([]string, 0, len(raw))
	for k := range raw {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, name := range names {
		entry, ok := raw[name].(map[string]any)
		if !ok {
			continue
		}
		soft := fmt.Sprint(entry["Soft"])
		switch name {
		case "memlock", "stack", "core":
			if soft == "-1" {
				out[name] = cty.StringVal("unlimited")
			} else if sz, err := spec.ParseSize(soft); err == nil {
				out[name] = cty.StringVal(sz.String())
			}
		case "nofile", "nproc":
			if soft == "-1" {
				soft = "unlimited"
			}
			out[name] = cty.StringVal(soft)
		}
	}
	return out
}

func setIf(b *hclwrite.Body, name, v string) {
	if v != "" {
		b.SetAttributeValue(name, cty.StringVal(v))
	}
}

func comment(s string) hclwrite.Tokens {
	return hclwrite.Tokens{{Type: hclsyntax.TokenComment, Bytes: []byte(s)}}
}

func traversal(root, attr string) hcl.Traversal {
	return hcl.Traversal{hcl.TraverseRoot{Name: root}, hcl.TraverseAttr{Name: attr}}
}
