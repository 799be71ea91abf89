package plan

import (
	"github.com/gpuform/gpuform/provision/resource"
	"github.com/gpuform/gpuform/spec"
)

// allAttrs stands for every attribute of a resource.
const allAttrs = "*"

// sensitiveAttrs says, per resource, which attributes come from a
// sensitive spec value: a sysctl by its key; a resource whose attributes
// mix or derive from the value (a package version in package names, a
// size in fstab options, a hash of file content) as a whole, since hashes
// of a short secret are as good as the secret.
func sensitiveAttrs(n *spec.Node) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	add := func(res, key string) {
		if out[res] == nil {
			out[res] = map[string]bool{}
		}
		out[res][key] = true
	}
	all := func(res ...string) {
		for _, r := range res {
			add(r, allAttrs)
		}
	}
	if d := n.Driver; d != nil {
		if d.Version.Sensitive || d.KernelModule.Sensitive {
			all(resource.DriverPackage, resource.FabricManager)
		}
		if d.FabricManager.Sensitive {
			all(resource.FabricManager)
		}
		if d.Peermem.Sensitive {
			all(resource.NvidiaPeermem)
		}
		if d.PersistenceMode.Sensitive {
			all(resource.NvidiaPersistenced)
		}
	}
	if c := n.CUDA; c != nil && c.Version.Sensitive {
		// NCCL and DCGM package names carry the CUDA major version.
		all(resource.CUDAToolkit, resource.NCCL, resource.DCGM)
	}
	if c := n.NCCL; c != nil && c.Version.Sensitive {
		all(resource.NCCL)
	}
	if c := n.DCGM; c != nil && c.Version.Sensitive {
		all(resource.DCGM)
	}
	if c := n.Container; c != nil {
		if c.NvidiaContainerToolkit.Sensitive {
			all(resource.ContainerToolkit)
		}
		if c.EnrootVersion.Sensitive {
			all(resource.EnrootPackage)
		}
		if c.PyxisVersion.Sensitive {
			all(resource.PyxisPackage)
		}
		if c.ApptainerVersion.Sensitive {
			all(resource.ApptainerPackage)
		}
		if c.Runtime.Sensitive || c.DefaultRuntime.Sensitive || c.DefaultShmSize.Sensitive {
			all(resource.DockerDaemon)
		}
		if c.EnrootCachePath.Sensitive || c.EnrootDataPath.Sensitive || c.EnrootRestrictDev.Sensitive {
			all(resource.EnrootConf)
		}
		if a := c.Apptainer; a.AlwaysUseNv.Sensitive || a.UseNvidiaContainerCLI.Sensitive || a.AllowSetuid.Sensitive || a.MountDev.Sensitive {
			all(resource.ApptainerConf)
		}
		if c.ImageDir.Sensitive {
			all(resource.ContainerImages)
		}
		for _, u := range c.Ulimits {
			if u.Sensitive {
				all(resource.DockerDaemon, resource.Limits)
			}
		}
	}
	if n.Shm != nil && n.Shm.Size.Sensitive {
		all(resource.ShmMount)
	}
	for k, v := range n.Sysctl {
		if v.Sensitive {
			add(resource.Sysctl, k)
		}
	}
	if n.NUMA != nil && n.NUMA.Balancing.Sensitive {
		add(resource.Sysctl, "kernel.numa_balancing")
	}
	if h := n.Hugepages; h != nil && (h.Size.Sensitive || h.Count.Sensitive) {
		// 1 GiB pages become kernel arguments.
		all(resource.HugePages, resource.KernelCmdline)
	}
	for _, a := range n.KernelArgs {
		if a.Sensitive {
			all(resource.KernelCmdline)
		}
	}
	if n.CPUGovernor.Sensitive {
		all(resource.CPUGovernor)
	}
	if a := n.Affinity; a != nil {
		sens := a.NCCLEnv.Sensitive || a.NCCLSocketIfname.Sensitive
		for _, h := range a.NCCLIBHCA {
			sens = sens || h.Sensitive
		}
		for _, nic := range a.GPUNIC {
			sens = sens || nic.Sensitive
		}
		if sens {
			all(resource.NCCLConf)
		}
	}
	return out
}

// hideSensitive replaces the sensitive attributes of rc, before and after
// (the live value is the secret once applied), by spec.Redacted, marks
// them Sensitive, and records which of them change.
func hideSensitive(rc *ResourceChange, keys map[string]bool) {
	if len(keys) == 0 {
		return
	}
	hide := func(k string) bool { return keys[allAttrs] || keys[k] }
	for k, a := range rc.After {
		if !hide(k) {
			continue
		}
		if b, ok := rc.Before[k]; !ok || b.Text != a.Text {
			rc.markChanged(k)
		}
	}
	for k := range rc.Before {
		if _, ok := rc.After[k]; !ok && hide(k) && rc.After != nil {
			rc.markChanged(k)
		}
	}
	rc.Before = redactAttrs(rc.Before, hide)
	rc.After = redactAttrs(rc.After, hide)
}

func (rc *ResourceChange) markChanged(k string) {
	if rc.sensitiveChanged == nil {
		rc.sensitiveChanged = map[string]bool{}
	}
	rc.sensitiveChanged[k] = true
}

// redactAttrs returns a copy of m with the hidden keys' values replaced by
// spec.Redacted and marked Sensitive.
func redactAttrs(m Attrs, hide func(string) bool) Attrs {
	if m == nil {
		return nil
	}
	out := make(Attrs, len(m))
	for k, v := range m {
		if hide(k) {
			v = Value{Value: resource.Value{Kind: v.Kind, Text: spec.Redacted}, Sensitive: true}
		}
		out[k] = v
	}
	return out
}

// Changed reports whether attribute k differs between Before and After,
// hidden values included (their redacted text reads the same on both
// sides): verify names each drifted attribute from it.
func (rc ResourceChange) Changed(k string) bool {
	b, inB := rc.Before[k]
	a, inA := rc.After[k]
	if rc.sensitiveChanged[k] {
		return true
	}
	return inB != inA || b.Text != a.Text
}
