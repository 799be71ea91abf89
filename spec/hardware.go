package spec

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/gpuform/gpuform/internal/lazyre"
)

// pciAddressPattern is a full PCI address: domain:bus:device.function.
var pciAddressPattern = lazyre.New(`^[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$`)

// hardwareReader walks a hardware object value, reporting problems with
// the path inside the object, since the value may come from a module whose
// source lines are not the user's.
type hardwareReader struct {
	rng hcl.Range
	// keyRanges holds the range of each top-level key when the value is
	// written as a literal object, so errors point at the right line.
	keyRanges map[string]hcl.Range
	diags     hcl.Diagnostics
}

func (r *hardwareReader) fail(path, format string, args ...any) {
	subject := r.rng
	top := path
	if i := strings.IndexAny(top, ".["); i >= 0 {
		top = top[:i]
	}
	if kr, ok := r.keyRanges[top]; ok {
		subject = kr
	}
	r.diags = append(r.diags, &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Invalid hardware description",
		Detail:   fmt.Sprintf("hardware.%s: %s", path, fmt.Sprintf(format, args...)),
		Subject:  subject.Ptr(),
	})
}

// keys checks that v is an object with only allowed attributes and returns
// it as an object value. A map (from tomap(), a map-typed variable, or a
// list of objects whose shapes differ, which HCL unifies into maps) is read
// as the object it spells, so its keys are checked the same way.
func (r *hardwareReader) keys(path string, v cty.Value, allowed []string) (cty.Value, bool) {
	if v.IsNull() {
		r.fail(path, "must not be null")
		return cty.NilVal, false
	}
	if v.Type().IsMapType() {
		if v.LengthInt() == 0 {
			v = cty.EmptyObjectVal
		} else {
			v = cty.ObjectVal(v.AsValueMap())
		}
	}
	if !v.Type().IsObjectType() {
		r.fail(path, "an object is required")
		return cty.NilVal, false
	}
	for _, k := range slices.Sorted(maps.Keys(v.Type().AttributeTypes())) {
		if !contains(allowed, k) {
			r.fail(strings.TrimPrefix(path+"."+k, "."), "unknown attribute.%s Known attributes: %s.", didYouMeanSuffix(k, allowed), strings.Join(allowed, ", "))
		}
	}
	return v, true
}

// list returns the elements of a list, tuple or set attribute. Tuples are
// read element by element rather than converted to a list, because a
// conversion fails as soon as two elements have different shapes, and the
// error would then blame the whole list instead of the element at fault.
func (r *hardwareReader) list(obj cty.Value, key string) ([]cty.Value, bool) {
	if !obj.Type().HasAttribute(key) {
		return nil, false
	}
	v := obj.GetAttr(key)
	if v.IsNull() {
		return nil, false
	}
	ty := v.Type()
	if !ty.IsListType() && !ty.IsTupleType() && !ty.IsSetType() {
		r.fail(key, "a list of objects is required")
		return nil, false
	}
	return v.AsValueSlice(), true
}

func (r *hardwareReader) get(obj cty.Value, path, key string, ty cty.Type, required bool) (cty.Value, bool) {
	if !obj.Type().HasAttribute(key) {
		if required {
			r.fail(path+key, "missing required attribute")
		}
		return cty.NilVal, false
	}
	v := obj.GetAttr(key)
	if v.IsNull() {
		if required {
			r.fail(path+key, "must not be null")
		}
		return cty.NilVal, false
	}
	cv, err := convert.Convert(v, ty)
	if err != nil {
		r.fail(path+key, "%s is required", ty.FriendlyName())
		return cty.NilVal, false
	}
	return cv, true
}

func (r *hardwareReader) str(obj cty.Value, path, key string, required bool) string {
	v, ok := r.get(obj, path, key, cty.String, required)
	if !ok {
		return ""
	}
	return v.AsString()
}

func (r *hardwareReader) num(obj cty.Value, path, key string, required bool) int {
	v, ok := r.get(obj, path, key, cty.Number, required)
	if !ok {
		return 0
	}
	n, ok := wholeNumber(v)
	if !ok || n < 0 {
		r.fail(path+key, "a whole number ≥ 0 is required")
	}
	return n
}

func (r *hardwareReader) boolean(obj cty.Value, path, key string) bool {
	v, ok := r.get(obj, path, key, cty.Bool, false)
	return ok && v.True()
}

var (
	hardwareKeys = []string{"name", "gpu_model", "gpu_model_unknown_ok", "gpu_count", "interconnect", "nvlink_domain", "cpu_sockets", "numa_nodes", "memory", "cpu_cores", "nvme", "gpus", "nics"}
	hwGPUKeys    = []string{"index", "pci", "numa", "switch"}
	hwNICKeys    = []string{"name", "netdev", "pci", "numa", "switch", "link", "speed_gbps", "rdma"}
)

// decodeHardware turns a hardware object into a Hardware and checks that it
// is self-consistent (indexes unique, counts agree, NUMA nodes in range).
func decodeHardware(v cty.Value, expr hcl.Expression) (*Hardware, hcl.Diagnostics) {
	rng := expr.Range()
	r := &hardwareReader{rng: rng, keyRanges: itemRanges(expr)}
	v, ok := r.keys("", v, hardwareKeys)
	if !ok {
		return nil, r.diags
	}
	hw := &Hardware{Range: rng}
	hw.Name = r.str(v, "", "name", false)
	hw.GPUModel = r.str(v, "", "gpu_model", true)
	hw.GPUModelRange = rng
	if kr, ok := r.keyRanges["gpu_model"]; ok {
		hw.GPUModelRange = kr
	}
	hw.GPUModelUnknownOK = r.boolean(v, "", "gpu_model_unknown_ok")
	hw.GPUCount = r.num(v, "", "gpu_count", true)
	hw.Interconnect = r.str(v, "", "interconnect", true)
	if hw.Interconnect != "" && !contains([]string{"nvswitch", "nvlink_bridge", "pcie", "nvlink_c2c"}, hw.Interconnect) {
		r.fail("interconnect", "%q is not one of \"nvswitch\", \"nvlink_bridge\", \"pcie\", \"nvlink_c2c\"", hw.Interconnect)
	}
	hw.NVLinkDomain = r.num(v, "", "nvlink_domain", false)
	if hw.NVLinkDomain == 0 {
		hw.NVLinkDomain = 1
		if hw.Interconnect == "nvswitch" {
			hw.NVLinkDomain = hw.GPUCount
		}
	}
	hw.CPUSockets = r.num(v, "", "cpu_sockets", false)
	hw.NUMANodes = r.num(v, "", "numa_nodes", false)
	if hw.NUMANodes == 0 {
		hw.NUMANodes = max(hw.CPUSockets, 1)
	}
	if s := r.str(v, "", "memory", false); s != "" {
		sz, err := ParseSize(s)
		if err != nil || sz.IsPercent() || sz.Unlimited {
			r.fail("memory", "%q is not an absolute size like \"2TiB\"", s)
		}
		hw.Memory = sz
	}
	hw.CPUCores = r.num(v, "", "cpu_cores", false)
	if s := r.str(v, "", "nvme", false); s != "" {
		sz, err := ParseSize(s)
		if err != nil || sz.IsPercent() || sz.Unlimited {
			r.fail("nvme", "%q is not an absolute size like \"15TB\"", s)
		}
		hw.NVMe = sz
	}
	if gv, ok := r.list(v, "gpus"); ok {
		seen := map[int]bool{}
		for i, g := range gv {
			p := fmt.Sprintf("gpus[%d].", i)
			g, ok := r.keys(strings.TrimSuffix(p, "."), g, hwGPUKeys)
			if !ok {
				continue
			}
			gpu := HardwareGPU{
				Index:  r.num(g, p, "index", true),
				PCI:    r.str(g, p, "pci", false),
				NUMA:   r.num(g, p, "numa", false),
				Switch: r.str(g, p, "switch", false),
			}
			if seen[gpu.Index] {
				r.fail(p+"index", "GPU index %d is listed twice", gpu.Index)
			}
			seen[gpu.Index] = true
			r.checkPlacement(p, gpu.PCI, gpu.NUMA, hw.NUMANodes)
			hw.GPUs = append(hw.GPUs, gpu)
		}
		if len(hw.GPUs) > 0 && hw.GPUCount != len(hw.GPUs) {
			r.fail("gpu_count", "is %d but %d GPUs are described", hw.GPUCount, len(hw.GPUs))
		}
	}
	if nv, ok := r.list(v, "nics"); ok {
		seen := map[string]bool{}
		for i, n := range nv {
			p := fmt.Sprintf("nics[%d].", i)
			n, ok := r.keys(strings.TrimSuffix(p, "."), n, hwNICKeys)
			if !ok {
				continue
			}
			nic := HardwareNIC{
				Name:      r.str(n, p, "name", true),
				Netdev:    r.str(n, p, "netdev", false),
				PCI:       r.str(n, p, "pci", false),
				NUMA:      r.num(n, p, "numa", false),
				Switch:    r.str(n, p, "switch", false),
				Link:      r.str(n, p, "link", false),
				SpeedGbps: r.num(n, p, "speed_gbps", false),
				RDMA:      r.boolean(n, p, "rdma"),
			}
			if nic.Name != "" && !deviceNamePattern.MatchString(nic.Name) {
				r.fail(p+"name", "%q is not a device name like \"mlx5_0\"", nic.Name)
			}
			if nic.Link != "" && !contains([]string{"infiniband", "ethernet", "roce"}, nic.Link) {
				r.fail(p+"link", "%q is not one of \"infiniband\", \"ethernet\", \"roce\"", nic.Link)
			}
			if seen[nic.Name] {
				r.fail(p+"name", "NIC %q is listed twice", nic.Name)
			}
			seen[nic.Name] = true
			r.checkPlacement(p, nic.PCI, nic.NUMA, hw.NUMANodes)
			hw.NICs = append(hw.NICs, nic)
		}
	}
	return hw, r.diags
}

func (r *hardwareReader) checkPlacement(p, pci string, numa, numaNodes int) {
	if pci != "" && !pciAddressPattern.MatchString(pci) {
		r.fail(p+"pci", "%q is not a PCI address like \"0000:18:00.0\"", pci)
	}
	if numa >= numaNodes {
		r.fail(p+"numa", "NUMA node %d does not exist on a machine with %d NUMA nodes", numa, numaNodes)
	}
}
