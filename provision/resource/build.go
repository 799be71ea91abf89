package resource

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/spec"
)

// Resource names, in the order a plan lists them when no dependency says
// otherwise.
const (
	DriverPackage      = "driver_package"
	FabricManager      = "fabric_manager"
	NvidiaPeermem      = "nvidia_peermem"
	NvidiaPersistenced = "nvidia_persistenced"
	CUDAToolkit        = "cuda_toolkit"
	NCCL               = "nccl"
	DCGM               = "dcgm"
	ContainerToolkit   = "container_toolkit"
	DockerDaemon       = "docker_daemon"
	ShmMount           = "shm"
	Sysctl             = "sysctl"
	HugePages          = "hugepages"
	KernelCmdline      = "kernel_cmdline"
	Limits             = "limits"
	CPUGovernor        = "cpu_governor"
	NCCLConf           = "nccl_conf"
)

// Files gpuform writes. Names carry "gpuform" so the facts probe reads them
// back (facts.ManagedDirs) and plan can diff them.
const (
	SysctlFile      = "/etc/sysctl.d/90-gpuform.conf"
	HugePagesFile   = "/etc/sysctl.d/91-gpuform-hugepages.conf"
	GrubDropIn      = "/etc/default/grub.d/90-gpuform.cfg"
	LimitsFile      = "/etc/security/limits.d/90-gpuform.conf"
	ModulesLoadFile = "/etc/modules-load.d/gpuform.conf"
	GovernorFile    = "/etc/tmpfiles.d/90-gpuform-governor.conf"
	NCCLConfFile    = "/etc/nccl.conf"
	DaemonJSON      = "/etc/docker/daemon.json"
	FstabFile       = "/etc/fstab"
)

// Build returns the resources that node n of a spec manages on a host with
// facts f, in dependency order. The family of f decides package names;
// settings that do not depend on packages are planned on any distribution.
// Warnings are settings gpuform cannot manage on this host and leaves alone.
func Build(n *spec.Node, f *facts.Node) (rs []Resource, warnings []string, err error) {
	family := f.OS.Family()
	driverVersion := ""
	if n.Driver != nil && n.Driver.Version.Set {
		driverVersion = resolveDriverRelease(family, string(n.Driver.KernelModule.V), n.Driver.Version.V.Raw, f)
	}
	cudaVersion := ""
	if n.CUDA != nil && n.CUDA.Version.Set {
		cudaVersion = n.CUDA.Version.V.Raw
	}
	// afterReboot reports that the driver being installed is not the one
	// running: its companions (nvidia-peermem, fabric manager,
	// persistenced) cannot start against the old module or none, so they
	// are set up for the next boot instead of failing the apply.
	var afterReboot func(*facts.Node) bool
	if n.Driver != nil && driverVersion != "" {
		wantLoaded, _, _ := strings.Cut(driverVersion, "-")
		afterReboot = func(f *facts.Node) bool { return f.Driver == nil || !versionMatches(f.Driver.Version, wantLoaded) }
	}
	if n.Driver != nil && driverVersion != "" {
		flavour := string(n.Driver.KernelModule.V)
		rs = append(rs, &pkgResource{
			base:   base{name: DriverPackage},
			family: family,
			set:    driverSet(family, flavour, driverVersion),
			reboot: true,
			loaded: func(n *facts.Node) (string, bool) {
				if n.Driver == nil {
					return "", false
				}
				return n.Driver.Version, true
			},
		})
		if n.Driver.FabricManager.V {
			rs = append(rs, &pkgResource{
				base:     base{name: FabricManager, deps: []string{DriverPackage}},
				family:   family,
				set:      fabricManagerSet(family, driverVersion),
				services: []string{"nvidia-fabricmanager.service"},
				// Fabric manager refuses to run against another driver release.
				afterReboot: afterReboot,
			})
		}
		if n.Driver.Peermem.V {
			r, err := peermem(afterReboot)
			if err != nil {
				return nil, nil, err
			}
			rs = append(rs, r)
		} else {
			rs = append(rs, absentFile(NvidiaPeermem, ModulesLoadFile))
		}
		if n.Driver.PersistenceMode.V {
			rs = append(rs, &serviceResource{base: base{name: NvidiaPersistenced, deps: []string{DriverPackage}}, unit: "nvidia-persistenced.service", afterReboot: afterReboot})
		}
	}
	if cudaVersion != "" {
		rs = append(rs, &pkgResource{base: base{name: CUDAToolkit, deps: optional(driverVersion != "", DriverPackage)}, family: family, set: cudaSet(family, cudaVersion)})
	}
	if n.NCCL != nil && n.NCCL.Version.Set {
		rs = append(rs, &pkgResource{base: base{name: NCCL, deps: optional(cudaVersion != "", CUDAToolkit)}, family: family, set: ncclSet(family, n.NCCL.Version.V.Raw, cudaVersion)})
	}
	if n.DCGM != nil && n.DCGM.Version.Set {
		rs = append(rs, &pkgResource{
			base:     base{name: DCGM, deps: optional(driverVersion != "", DriverPackage)},
			family:   family,
			set:      dcgmSet(family, n.DCGM.Version.V.Raw, cudaVersion),
			services: []string{"nvidia-dcgm.service"},
			// nv-hostengine fails on NVML's "driver/library version
			// mismatch" until the new driver is loaded.
			afterReboot: afterReboot,
		})
	}
	if c := n.Container; c != nil {
		if c.NvidiaContainerToolkit.Set {
			rs = append(rs, &pkgResource{base: base{name: ContainerToolkit, deps: optional(driverVersion != "", DriverPackage)}, family: family, set: containerToolkitSet(family, c.NvidiaContainerToolkit.V.Raw)})
		}
		if c.Runtime.V == "containerd" {
			warnings = append(warnings, "container runtime containerd: gpuform does not manage containerd's configuration yet; run nvidia-ctk runtime configure --runtime=containerd on the host")
		} else if r := dockerDaemon(c); r != nil {
			if c.NvidiaContainerToolkit.Set {
				r.deps = []string{ContainerToolkit}
			}
			rs = append(rs, r)
		}
	}
	if n.Shm != nil && n.Shm.Size.Set {
		r, err := shmResourceFor(n.Shm.Size.V)
		if err != nil {
			return nil, nil, err
		}
		rs = append(rs, r)
	}
	r, err := sysctlResource(n)
	if err != nil {
		return nil, nil, err
	}
	rs = append(rs, r)
	hp, bootArgs, err := hugepagesResource(n)
	if err != nil {
		return nil, nil, err
	}
	if hp != nil {
		rs = append(rs, hp)
	}
	kc, err := kernelCmdline(n, family, bootArgs)
	if err != nil {
		return nil, nil, err
	}
	rs = append(rs, kc)
	if lr := limitsResource(n); lr != nil {
		rs = append(rs, lr)
	}
	if n.CPUGovernor.Set {
		g, err := governorResource(n.CPUGovernor.V)
		if err != nil {
			return nil, nil, err
		}
		rs = append(rs, g)
	} else {
		// No governor wanted any more: drop the boot-time setting gpuform
		// wrote; the running governor stays until the next boot.
		rs = append(rs, absentFile(CPUGovernor, GovernorFile))
	}
	nc, err := ncclConf(n)
	if err != nil {
		return nil, nil, err
	}
	if nc != nil {
		rs = append(rs, nc)
	}
	rs = withDpkgRepair(rs, f)
	ordered, err := Order(rs)
	return ordered, warnings, err
}

// absentFile is a resource whose file gpuform wrote earlier and the spec no
// longer asks for: it plans a delete when the file is there, nothing else.
func absentFile(name, path string) *fileResource {
	return &fileResource{base: base{name: name}, path: path, current: managedFile(path),
		attrs: func(_ *facts.Node, cur string, _ bool) map[string]string {
			return attrs{"file": path, "content": "sha256:" + shortSum(cur)}
		}}
}

func optional(ok bool, name string) []string {
	if ok {
		return []string{name}
	}
	return nil
}

// serviceResource keeps a systemd unit enabled and running.
type serviceResource struct {
	base
	unit string
	// afterReboot, when it reports true, means the unit can only start at
	// the next boot: it is enabled now and left stopped.
	afterReboot func(*facts.Node) bool
}

func (r *serviceResource) Diff(n *facts.Node) (Change, error) {
	st := n.Unit(r.unit)
	before := attrs{"enabled": st.Enabled, "active": st.Active}
	if st.Enabled == "not-found" {
		before = nil
	}
	after := attrs{"enabled": "enabled", "active": "active"}
	c := r.change(before, after)
	if c.Action == NoOp {
		return c, nil
	}
	deferred := r.afterReboot != nil && r.afterReboot(n)
	if deferred && st.Enabled == "enabled" {
		c.Action = NoOp
		c.After = c.Before
		c.RebootPending = true
		return c, nil
	}
	if before != nil {
		c.Action = Update
	}
	c.RebootRequired = deferred
	s, err := unitStep(r.unit, !deferred)
	if err != nil {
		return Change{}, err
	}
	c.Steps = []Step{s}
	return c, nil
}

// peermem loads nvidia-peermem now and at every boot (modules-load.d), for
// GPUDirect RDMA. /proc/modules spells it nvidia_peermem.
func peermem(afterReboot func(*facts.Node) bool) (*fileResource, error) {
	const module = "nvidia_peermem"
	if err := check(modulePattern, "module name", module); err != nil {
		return nil, err
	}
	return &fileResource{
		base:    base{name: NvidiaPeermem, deps: []string{DriverPackage}},
		path:    ModulesLoadFile,
		content: managedHeader + module + "\n",
		current: managedFile(ModulesLoadFile),
		attrs: func(n *facts.Node, content string, exists bool) map[string]string {
			return attrs{"loaded": boolStr(n.HasModule(module)), "load_at_boot": boolStr(exists && strings.Contains(content, module))}
		},
		desired:     attrs{"loaded": "true", "load_at_boot": "true"},
		live:        func(n *facts.Node) bool { return n.HasModule(module) },
		post:        []Step{commandStep("load "+module, "modprobe "+q(module))},
		afterReboot: afterReboot,
	}, nil
}

// sysctlResource writes the spec's sysctls, and kernel.numa_balancing from
// the numa block, to one drop-in and applies it with sysctl -p.
func sysctlResource(n *spec.Node) (*fileResource, error) {
	want := map[string]string{}
	for k, v := range n.Sysctl {
		want[k] = normSpace(v.V)
	}
	if n.NUMA != nil && n.NUMA.Balancing.Set {
		want["kernel.numa_balancing"] = map[bool]string{true: "1", false: "0"}[n.NUMA.Balancing.V]
	}
	keys := slices.Sorted(maps.Keys(want))
	content := ""
	if len(keys) > 0 {
		var b strings.Builder
		b.WriteString(managedHeader)
		for _, k := range keys {
			if err := check(sysctlKeyPattern, "sysctl name", k); err != nil {
				return nil, err
			}
			if err := check(sysctlValuePattern, "sysctl value", want[k]); err != nil {
				return nil, err
			}
			fmt.Fprintf(&b, "%s = %s\n", k, want[k])
		}
		content = b.String()
	}
	return &fileResource{
		base:    base{name: Sysctl},
		path:    SysctlFile,
		content: content,
		current: managedFile(SysctlFile),
		attrs: func(f *facts.Node, cur string, exists bool) map[string]string {
			out := attrs{}
			inFile := keyValueLines(cur)
			for _, k := range keys {
				if v, ok := f.Sysctl(k); ok {
					out[k] = normSpace(v)
				} else if v, ok := inFile[k]; ok {
					out[k] = v
				}
			}
			for k, v := range inFile {
				if _, ok := out[k]; !ok {
					out[k] = v
				}
			}
			return out
		},
		desired: want,
		precheck: func(f *facts.Node) error {
			for _, k := range keys {
				if exists, known := f.HasSysctl(k); known && !exists {
					return fmt.Errorf("sysctl %s does not exist on this node (no /proc/sys/%s): sysctl -p would reject the drop-in; check the name in the spec", k, strings.ReplaceAll(k, ".", "/"))
				}
			}
			return nil
		},
		live: func(f *facts.Node) bool {
			for _, k := range keys {
				if v, ok := f.Sysctl(k); ok && normSpace(v) != want[k] {
					return false
				}
			}
			return true
		},
		// Tools take paths as the node sees them; only the shell's own
		// file operations go through "$R".
		post: []Step{commandStep("apply "+SysctlFile, `[ ! -f "$R"`+q(SysctlFile)+` ] || sysctl -q -p `+q(SysctlFile))},
	}, nil
}

// hugepagesResource reserves huge pages: default-size (2 MiB) pages through
// vm.nr_hugepages, live and persistent; 1 GiB pages can only be reserved
// reliably at boot, so they become kernel arguments.
func hugepagesResource(n *spec.Node) (*fileResource, []string, error) {
	h := n.Hugepages
	if h == nil || !h.Count.Set {
		return &fileResource{base: base{name: HugePages}, path: HugePagesFile, current: managedFile(HugePagesFile),
			attrs: func(*facts.Node, string, bool) map[string]string { return attrs{"file": HugePagesFile} }}, nil, nil
	}
	size := h.Size.V.Bytes
	if size == 0 {
		size = 2 << 20
	}
	count := strconv.Itoa(h.Count.V)
	if size == 1<<30 {
		return nil, []string{"default_hugepagesz=1G", "hugepagesz=1G", "hugepages=" + count}, nil
	}
	if size != 2<<20 {
		return nil, nil, fmt.Errorf("hugepages: page size %s is not one gpuform reserves (2MiB or 1GiB)", spec.FormatBytes(size))
	}
	content := managedHeader + "vm.nr_hugepages = " + count + "\n"
	return &fileResource{
		base:    base{name: HugePages},
		path:    HugePagesFile,
		content: content,
		current: managedFile(HugePagesFile),
		attrs: func(f *facts.Node, _ string, _ bool) map[string]string {
			return attrs{"page_size": spec.FormatBytes(f.HugePages.PageSizeBytes), "count": strconv.FormatUint(f.HugePages.Total, 10)}
		},
		desired: attrs{"page_size": "2MiB", "count": count},
		live: func(f *facts.Node) bool {
			return f.HugePages.Total == uint64(h.Count.V) && (f.HugePages.PageSizeBytes == 0 || f.HugePages.PageSizeBytes == 2<<20)
		},
		post: []Step{commandStep("reserve huge pages", `sysctl -q -p `+q(HugePagesFile))},
	}, nil, nil
}

// kernelCmdline adds arguments to the kernel command line through a GRUB
// drop-in; the change takes effect at the next boot.
func kernelCmdline(n *spec.Node, family string, extra []string) (*fileResource, error) {
	var args []string
	for _, a := range n.KernelArgs {
		args = append(args, a.V)
	}
	args = append(args, extra...)
	for _, a := range args {
		if err := check(kernelArgPattern, "kernel argument", a); err != nil {
			return nil, err
		}
	}
	content := ""
	if len(args) > 0 {
		// Appending to GRUB_CMDLINE_LINUX keeps the distribution's own
		// arguments; /etc/default/grub.d/*.cfg is sourced after
		// /etc/default/grub by update-grub on Debian and Ubuntu.
		content = managedHeader + `GRUB_CMDLINE_LINUX="$GRUB_CMDLINE_LINUX ` + strings.Join(args, " ") + `"` + "\n"
	}
	// The generated boot configuration is not probed, so regenerating it
	// is part of the step that writes the drop-in.
	regen := "update-grub"
	var regenFor func(cur string, exists bool) (string, error)
	if family == FamilyRHEL {
		// RHEL's grub2-mkconfig does not read grub.d drop-ins; grubby edits
		// every installed kernel's boot entry instead, so arguments the
		// previous drop-in added and the spec dropped are removed there
		// by name (the drop-in is gpuform's record of what it added).
		regen = ""
		regenFor = func(cur string, exists bool) (string, error) {
			want := map[string]bool{}
			for _, a := range args {
				want[a] = true
			}
			var removed []string
			if exists {
				for _, a := range strings.Fields(dropInArgs(cur)) {
					if err := check(kernelArgPattern, "kernel argument", a); err != nil {
						return "", err
					}
					if !want[a] {
						removed = append(removed, a)
					}
				}
			}
			cmd := "grubby --update-kernel=ALL"
			if len(removed) > 0 {
				cmd += " --remove-args=" + q(strings.Join(removed, " "))
			}
			if len(args) > 0 {
				cmd += " --args=" + q(strings.Join(args, " "))
			}
			if len(removed) == 0 && len(args) == 0 {
				return "", nil
			}
			return cmd, nil
		}
	}
	return &fileResource{
		base:    base{name: KernelCmdline},
		path:    GrubDropIn,
		content: content,
		current: managedFile(GrubDropIn),
		attrs: func(f *facts.Node, cur string, exists bool) map[string]string {
			if !exists {
				return attrs{"args": ""}
			}
			return attrs{"args": dropInArgs(cur)}
		},
		desired: attrs{"args": strings.Join(args, " ")},
		live: func(f *facts.Node) bool {
			for _, a := range args {
				name, val, hasVal := strings.Cut(a, "=")
				got, ok := f.Kernel.Arg(name)
				if !ok || (hasVal && got != val) {
					return false
				}
			}
			return true
		},
		then:    regen,
		thenFor: regenFor,
		reboot:  true,
	}, nil
}

// dropInArgs reads the arguments gpuform's GRUB drop-in appends.
func dropInArgs(content string) string {
	v := content
	if i := strings.Index(v, "$GRUB_CMDLINE_LINUX "); i >= 0 {
		v = v[i+len("$GRUB_CMDLINE_LINUX "):]
	}
	v, _, _ = strings.Cut(v, `"`)
	return strings.TrimSpace(v)
}

// limitsResource mirrors the container ulimits on the host through
// pam_limits, so that jobs run outside containers get the same memlock and
// stack limits (RDMA registration needs memlock). pam_limits counts memlock
// and stack in KiB.
func limitsResource(n *spec.Node) *fileResource {
	if n.Container == nil || len(n.Container.Ulimits) == 0 {
		return &fileResource{base: base{name: Limits}, path: LimitsFile, current: managedFile(LimitsFile),
			attrs: func(f *facts.Node, cur string, _ bool) map[string]string { return limitAttrs(f) }}
	}
	var b strings.Builder
	b.WriteString(managedHeader)
	want := attrs{}
	for _, item := range []string{"memlock", "stack", "nofile", "nproc"} {
		a, ok := n.Container.Ulimits[item]
		if !ok {
			continue
		}
		v := "unlimited"
		if !a.V.Unlimited {
			x := a.V.Bytes
			if item == "memlock" || item == "stack" {
				x /= 1024
			}
			v = strconv.FormatUint(x, 10)
		}
		want[item] = v
		fmt.Fprintf(&b, "* soft %s %s\n* hard %s %s\n", item, v, item, v)
	}
	return &fileResource{
		base:    base{name: Limits},
		path:    LimitsFile,
		content: b.String(),
		current: managedFile(LimitsFile),
		attrs:   func(f *facts.Node, _ string, _ bool) map[string]string { return limitAttrs(f) },
		desired: want,
	}
}

// limitAttrs reads the soft limits gpuform's file sets.
func limitAttrs(f *facts.Node) map[string]string {
	out := attrs{}
	for _, l := range f.Limits {
		if l.File == LimitsFile && l.Domain == "*" && (l.Type == "soft" || l.Type == "-") {
			out[l.Item] = l.Value
		}
	}
	return out
}

// governorResource sets the cpufreq governor on every CPU now, and at boot
// through systemd-tmpfiles (which writes sysfs files with 'w' lines).
func governorResource(gov string) (*fileResource, error) {
	if err := check(governorPattern, "CPU governor", gov); err != nil {
		return nil, err
	}
	content := managedHeader + "w /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor - - - - " + gov + "\n"
	return &fileResource{
		base:    base{name: CPUGovernor},
		path:    GovernorFile,
		content: content,
		current: managedFile(GovernorFile),
		attrs: func(f *facts.Node, _ string, exists bool) map[string]string {
			return attrs{"governor": strings.Join(f.CPU.Governors, ","), "set_at_boot": boolStr(exists)}
		},
		desired: attrs{"governor": gov, "set_at_boot": "true"},
		live: func(f *facts.Node) bool {
			// No cpufreq (VMs, some BIOS settings): nothing to set.
			return len(f.CPU.Governors) == 0 || len(f.CPU.Governors) == 1 && f.CPU.Governors[0] == gov
		},
		// Each CPU's file is resolved inside the root, as every write is.
		post: []Step{commandStep("set the "+gov+" governor on every CPU",
			`if [ -n "$R" ]; then R=$(cd -P -- "$R" && pwd -P); fi`,
			facts.Resolver,
			`rd /sys/devices/system/cpu || exit 0`,
			`for c in "$_r"/cpu[0-9]*; do`,
			`	rp "/sys/devices/system/cpu/${c##*/}/cpufreq/scaling_governor" && [ -f "$_r" ] || continue`,
			`	printf '%s\n' `+q(gov)+` >"$_r"`,
			`done`)},
	}, nil
}

// ncclConf writes /etc/nccl.conf from the affinity block: NCCL_IB_HCA lists
// the NICs paired with GPUs in GPU order (or the explicit list), and
// NCCL_SOCKET_IFNAME when given. NCCL reads this file at init.
func ncclConf(n *spec.Node) (*fileResource, error) {
	a := n.Affinity
	if a == nil || !a.NCCLEnv.V {
		return nil, nil
	}
	var hcas []string
	if len(a.NCCLIBHCA) > 0 {
		for _, h := range a.NCCLIBHCA {
			hcas = append(hcas, h.V)
		}
	} else {
		gpus := make([]int, 0, len(a.GPUNIC))
		for g := range a.GPUNIC {
			gpus = append(gpus, g)
		}
		sort.Ints(gpus)
		seen := map[string]bool{}
		for _, g := range gpus {
			if nic := a.GPUNIC[g].V; !seen[nic] {
				seen[nic] = true
				hcas = append(hcas, nic)
			}
		}
	}
	// The spec checks these too; a value with a newline must never reach
	// the file, where it would be a setting of its own for every job.
	for _, h := range hcas {
		if err := check(ncclHCAPattern, "NCCL_IB_HCA entry", h); err != nil {
			return nil, err
		}
	}
	if a.NCCLSocketIfname.Set {
		if err := check(ncclIfnamePattern, "NCCL_SOCKET_IFNAME", a.NCCLSocketIfname.V); err != nil {
			return nil, err
		}
	}
	want := attrs{}
	var keys []string
	if len(hcas) > 0 {
		want["NCCL_IB_HCA"] = strings.Join(hcas, ",")
		keys = append(keys, "NCCL_IB_HCA")
	}
	if a.NCCLSocketIfname.Set {
		want["NCCL_SOCKET_IFNAME"] = a.NCCLSocketIfname.V
		keys = append(keys, "NCCL_SOCKET_IFNAME")
	}
	if len(keys) == 0 {
		return nil, nil
	}
	return &fileResource{
		base: base{name: NCCLConf},
		path: NCCLConfFile,
		// Not empty: the file is wanted; edit computes it.
		content: "wanted",
		edit: func(cur []byte, _ bool) (string, error) {
			return setKeyLines(cur, keys, want)
		},
		current: func(f *facts.Node) (string, bool) {
			if f.NCCLConf == nil {
				return "", false
			}
			return f.NCCLConf.Content, true
		},
		// Only gpuform's keys: the operator's other settings stay as they are.
		attrs: func(_ *facts.Node, cur string, _ bool) map[string]string {
			out := attrs{}
			all := keyValueLines(cur)
			for _, k := range keys {
				if v, ok := all[k]; ok {
					out[k] = v
				}
			}
			return out
		},
		desired: want,
	}, nil
}

// setKeyLines sets KEY=value lines of a file such as nccl.conf: the line
// of each key in keys is replaced where it is, or appended; every other
// byte is kept. A key set twice is an error, since which line wins is the
// reader's business.
func setKeyLines(cur []byte, keys []string, want map[string]string) (string, error) {
	lines := fstabLines(cur)
	at := map[string]int{}
	for i, line := range lines {
		t := strings.TrimLeft(string(line), " \t")
		k, _, ok := strings.Cut(t, "=")
		if !ok || strings.HasPrefix(t, "#") {
			continue
		}
		k = strings.TrimSpace(k)
		if _, managed := want[k]; !managed {
			continue
		}
		if j, dup := at[k]; dup {
			return "", fmt.Errorf("%s is set twice (lines %d and %d); remove one, then plan again", k, j+1, i+1)
		}
		at[k] = i
	}
	var b strings.Builder
	for i, line := range lines {
		replaced := false
		for k, j := range at {
			if j == i {
				b.WriteString(k + "=" + want[k] + "\n")
				replaced = true
			}
		}
		if replaced {
			continue
		}
		b.Write(line)
		if i < len(lines)-1 || cur[len(cur)-1] == '\n' || len(at) < len(keys) {
			b.WriteByte('\n')
		}
	}
	for _, k := range keys {
		if _, ok := at[k]; !ok {
			b.WriteString(k + "=" + want[k] + "\n")
		}
	}
	return b.String(), nil
}
