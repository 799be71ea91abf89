//go:build cgo

package nvmlfacts

import (
	"context"
	"fmt"
	"math/bits"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuform/gpuform/internal/jsonformat"
)

// InitError is returned when NVML itself could not start: no
// libnvidia-ml.so.1, no driver loaded, or a driver/library mismatch. No
// other NVML call is made after it (an un-initialised NVML call kills the
// process with a symbol lookup error).
type InitError struct {
	// Ret is NVML's return code from Init.
	Ret nvml.Return
}

// Error explains the failure in the words an operator needs.
func (e *InitError) Error() string {
	switch e.Ret {
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		return "NVML: libnvidia-ml.so.1 not found: the NVIDIA driver's user-space library is not installed on this node"
	case nvml.ERROR_DRIVER_NOT_LOADED:
		return "NVML: the NVIDIA kernel driver is not loaded"
	case nvml.ERROR_LIB_RM_VERSION_MISMATCH:
		return "NVML: driver/library version mismatch: the kernel module and libnvidia-ml differ (reboot or reload the driver)"
	case nvml.ERROR_NO_PERMISSION:
		return "NVML: no permission to access the GPUs"
	}
	return fmt.Sprintf("NVML: init failed: %v", e.Ret)
}

// Collect reads a Report through lib. It calls Init before anything else and
// turns a failed Init into an *InitError. ERROR_NOT_SUPPORTED leaves a field
// absent; any other per-field failure leaves it absent and adds a warning.
// Only failures that make the Report meaningless (no device count, no
// handle) are returned as errors.
func Collect(ctx context.Context, lib nvml.Interface, opts Options) (*Report, error) {
	if ret := lib.Init(); ret != nvml.SUCCESS {
		return nil, &InitError{Ret: ret}
	}
	defer lib.Shutdown() //nolint:errcheck // the report is made; a failed shutdown changes nothing in it

	c := collector{lib: lib, opts: opts, rep: &Report{FormatVersion: jsonformat.Version, Source: SourceNVML, GPUs: []GPU{}}}
	c.has = func(string) bool { return true }
	if ext := lib.Extensions(); ext != nil {
		c.has = func(sym string) bool { return ext.LookupSymbol(sym) == nil }
	}
	return c.run(ctx)
}

type collector struct {
	lib  nvml.Interface
	opts Options
	rep  *Report
	has  func(symbol string) bool
}

// ok reports whether ret is SUCCESS; other codes than NOT_SUPPORTED are
// recorded as warnings so a broken call is visible without failing the run.
func (c *collector) ok(ret nvml.Return, where, call string) bool {
	if ret == nvml.SUCCESS {
		return true
	}
	if ret != nvml.ERROR_NOT_SUPPORTED {
		c.rep.Warnings = append(c.rep.Warnings, fmt.Sprintf("%s: %s: %v", where, call, ret))
	}
	return false
}

func (c *collector) run(ctx context.Context) (*Report, error) {
	if v, ret := c.lib.SystemGetDriverVersion(); c.ok(ret, "system", "SystemGetDriverVersion") {
		c.rep.DriverVersion = v
	}
	if v, ret := c.lib.SystemGetNVMLVersion(); c.ok(ret, "system", "SystemGetNVMLVersion") {
		c.rep.NVMLVersion = v
	}
	if v, ret := c.lib.SystemGetCudaDriverVersion(); c.ok(ret, "system", "SystemGetCudaDriverVersion") {
		// NVML encodes 12.4 as 12040 (major*1000 + minor*10).
		c.rep.CUDADriverVersion = fmt.Sprintf("%d.%d", v/1000, v%1000/10)
	}
	n, ret := c.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("NVML: DeviceGetCount: %w", ret)
	}
	devs := make([]nvml.Device, n)
	for i := 0; i < n; i++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		d, ret := c.lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			// A GPU that fell off the bus answers ERROR_GPU_IS_LOST here;
			// the count check must still see it, so it is reported by
			// index with what little is known.
			c.rep.Warnings = append(c.rep.Warnings, fmt.Sprintf("gpu%d: DeviceGetHandleByIndex: %v", i, ret))
			continue
		}
		devs[i] = d
		c.rep.GPUs = append(c.rep.GPUs, c.gpu(i, d))
	}
	c.gpuPairs(devs)
	c.nicPairs()
	if c.opts.Processes {
		c.processes(devs)
	}
	if c.opts.XIDWindow > 0 {
		w, err := c.watchXID(ctx, devs)
		if err != nil {
			return nil, err
		}
		c.rep.XID = w
	}
	return c.rep, nil
}

func (c *collector) gpu(i int, d nvml.Device) GPU {
	where := "gpu" + strconv.Itoa(i)
	g := GPU{Index: i}
	if v, ret := d.GetName(); c.ok(ret, where, "GetName") {
		g.Name = v
	}
	if v, ret := d.GetUUID(); c.ok(ret, where, "GetUUID") {
		g.UUID = v
	}
	if p, ret := d.GetPciInfo(); c.ok(ret, where, "GetPciInfo") {
		g.BusID = cString(p.BusId[:])
		if p.PciDeviceId != 0 {
			g.PCIDeviceID = fmt.Sprintf("0x%08X", p.PciDeviceId)
		}
	}
	if v, ret := d.GetMinorNumber(); c.ok(ret, where, "GetMinorNumber") {
		g.MinorNumber = &v
	}
	if v, ret := d.GetSerial(); c.ok(ret, where, "GetSerial") {
		g.Serial = v
	}
	if v, ret := d.GetVirtualizationMode(); c.ok(ret, where, "GetVirtualizationMode") {
		g.Virtualization = virtualizationName(v)
	}
	g.NUMANode = c.numaNode(where, d)
	maxCPUs := c.opts.MaxCPUs
	if maxCPUs <= 0 {
		maxCPUs = 1024
	}
	if m, ret := d.GetCpuAffinity(maxCPUs); c.ok(ret, where, "GetCpuAffinity") {
		g.CPUAffinity = cpuList(m)
	}
	if v, ret := d.GetVbiosVersion(); c.ok(ret, where, "GetVbiosVersion") {
		g.VBIOS = v
	}
	if c.has("nvmlDeviceGetGpuFabricInfo") {
		if v, ret := d.GetGpuFabricInfo(); c.ok(ret, where, "GetGpuFabricInfo") && v.State != nvml.GPU_FABRIC_STATE_NOT_SUPPORTED {
			g.Fabric = fabricOf(v)
		}
	}
	if v, ret := d.GetPersistenceMode(); c.ok(ret, where, "GetPersistenceMode") {
		on := v == nvml.FEATURE_ENABLED
		g.PersistenceMode = &on
	}
	if cur, pend, ret := d.GetEccMode(); c.ok(ret, where, "GetEccMode") {
		e := &ECC{Enabled: cur == nvml.FEATURE_ENABLED, PendingEnabled: pend == nvml.FEATURE_ENABLED}
		if v, ret := d.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC); c.ok(ret, where, "GetTotalEccErrors(volatile)") {
			e.VolatileUncorrected = &v
		}
		if v, ret := d.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.AGGREGATE_ECC); c.ok(ret, where, "GetTotalEccErrors(aggregate)") {
			e.AggregateUncorrected = &v
		}
		g.ECC = e
	}
	remapped := false
	if c.has("nvmlDeviceGetRemappedRows") {
		if corr, unc, pend, fail, ret := d.GetRemappedRows(); c.ok(ret, where, "GetRemappedRows") {
			g.RemappedRows = &RemappedRows{Corrected: corr, Uncorrected: unc, Pending: pend, Failure: fail}
			remapped = true
		}
	}
	if !remapped {
		// Page retirement is the pre-Ampere mechanism; Ampere and later
		// answer NOT_SUPPORTED here and use row remapping instead.
		g.RetiredPages = c.retiredPages(where, d)
	}
	g.PCIe = c.pcie(where, d)
	g.NVLinks = c.nvlinks(where, d)
	if v, ret := d.GetTemperature(nvml.TEMPERATURE_GPU); c.ok(ret, where, "GetTemperature") {
		t := int(v)
		g.TemperatureC = &t
	}
	if v, ret := d.GetEnforcedPowerLimit(); c.ok(ret, where, "GetEnforcedPowerLimit") {
		w := float64(v) / 1000 // NVML reports milliwatts
		g.PowerLimitW = &w
	}
	var mask uint64
	var ret nvml.Return
	// The EventReasons name replaced ThrottleReasons in driver 535; the old
	// symbol still exists, the new one must not be called where absent.
	if c.has("nvmlDeviceGetCurrentClocksEventReasons") {
		mask, ret = d.GetCurrentClocksEventReasons()
	} else {
		mask, ret = d.GetCurrentClocksThrottleReasons()
	}
	if c.ok(ret, where, "GetCurrentClocksEventReasons") {
		g.Throttle = &Throttle{Mask: mask, Active: ThrottleReasonNames(mask)}
	}
	if cur, pend, ret := d.GetMigMode(); c.ok(ret, where, "GetMigMode") {
		g.MIG = &MIG{Enabled: cur == nvml.DEVICE_MIG_ENABLE, PendingEnabled: pend == nvml.DEVICE_MIG_ENABLE}
	}
	return g
}

// processes lists each GPU's compute processes and reads their placement
// from /proc. A GPU whose list cannot be read adds a warning: its
// processes are then unknown, not absent.
func (c *collector) processes(devs []nvml.Device) {
	c.rep.Processes = &Processes{List: []Process{}}
	for i, d := range devs {
		if d == nil {
			continue
		}
		ps, ret := d.GetComputeRunningProcesses()
		if ret != nvml.SUCCESS {
			c.rep.Warnings = append(c.rep.Warnings, fmt.Sprintf("gpu%d: GetComputeRunningProcesses: %v (its processes are not judged)", i, ret))
			continue
		}
		for _, p := range ps {
			c.rep.Processes.List = append(c.rep.Processes.List, ReadProcess(c.opts.ProcRoot, i, int(p.Pid)))
		}
	}
}

func (c *collector) numaNode(where string, d nvml.Device) *int {
	nodes := c.opts.MaxNUMANodes
	if nodes <= 0 {
		nodes = 64
	}
	// Host memory affinity is what `bind` in a spec means (the CPUs and
	// memory a GPU's process should use); x86 drivers answer it.
	if m, ret := d.GetMemoryAffinity(nodes, nvml.AFFINITY_SCOPE_NODE); c.ok(ret, where, "GetMemoryAffinity") {
		var set []int
		for w, word := range m {
			for ; word != 0; word &= word - 1 {
				set = append(set, w*bits.UintSize+bits.TrailingZeros(word))
			}
		}
		switch {
		case len(set) == 1:
			return &set[0]
		case len(set) > 1:
			// More than one node: the platform does not say which node
			// the GPU is near (or it is equidistant). Taking the first
			// would be a guess that passes or fails a spec's bind by luck.
			c.rep.Warnings = append(c.rep.Warnings, fmt.Sprintf("%s: memory affinity spans NUMA nodes %v: the platform does not say which node the GPU is near", where, set))
		}
	}
	// Coherent platforms (Grace) answer GetNumaNodeId instead.
	if c.has("nvmlDeviceGetNumaNodeId") {
		if n, ret := d.GetNumaNodeId(); c.ok(ret, where, "GetNumaNodeId") && n >= 0 {
			return &n
		}
	}
	return nil
}

func (c *collector) retiredPages(where string, d nvml.Device) *RetiredPages {
	sbe, ret := d.GetRetiredPages(nvml.PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS)
	if !c.ok(ret, where, "GetRetiredPages") {
		return nil
	}
	dbe, ret := d.GetRetiredPages(nvml.PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR)
	if !c.ok(ret, where, "GetRetiredPages") {
		return nil
	}
	rp := &RetiredPages{MultipleSingleBit: len(sbe), DoubleBit: len(dbe)}
	if st, ret := d.GetRetiredPagesPendingStatus(); c.ok(ret, where, "GetRetiredPagesPendingStatus") {
		rp.Pending = st == nvml.FEATURE_ENABLED
	}
	return rp
}

func (c *collector) pcie(where string, d nvml.Device) *PCIeLink {
	cg, r1 := d.GetCurrPcieLinkGeneration()
	mg, r2 := d.GetMaxPcieLinkGeneration()
	cw, r3 := d.GetCurrPcieLinkWidth()
	mw, r4 := d.GetMaxPcieLinkWidth()
	if !c.ok(r1, where, "GetCurrPcieLinkGeneration") || !c.ok(r2, where, "GetMaxPcieLinkGeneration") ||
		!c.ok(r3, where, "GetCurrPcieLinkWidth") || !c.ok(r4, where, "GetMaxPcieLinkWidth") {
		return nil
	}
	l := &PCIeLink{CurrentGen: cg, MaxGen: mg, CurrentWidth: cw, MaxWidth: mw}
	if c.has("nvmlDeviceGetGpuMaxPcieLinkGeneration") {
		if g, ret := d.GetGpuMaxPcieLinkGeneration(); c.ok(ret, where, "GetGpuMaxPcieLinkGeneration") {
			l.GPUMaxGen = g
		}
	}
	return l
}

func (c *collector) nvlinks(where string, d nvml.Device) []NVLink {
	var links []NVLink
	for l := 0; l < nvml.NVLINK_MAX_LINKS; l++ {
		st, ret := d.GetNvLinkState(l)
		if ret == nvml.ERROR_INVALID_ARGUMENT || ret == nvml.ERROR_NOT_SUPPORTED {
			// Past the last link of this GPU, or no NVLink at all.
			break
		}
		if !c.ok(ret, where, fmt.Sprintf("GetNvLinkState(%d)", l)) {
			continue
		}
		link := NVLink{Link: l, Active: st == nvml.FEATURE_ENABLED}
		if link.Active {
			if p, ret := d.GetNvLinkRemotePciInfo(l); c.ok(ret, where, fmt.Sprintf("GetNvLinkRemotePciInfo(%d)", l)) {
				link.RemoteBusID = cString(p.BusId[:])
			}
			if t, ret := d.GetNvLinkRemoteDeviceType(l); c.ok(ret, where, fmt.Sprintf("GetNvLinkRemoteDeviceType(%d)", l)) {
				link.RemoteType = remoteType(t)
			}
			link.Errors = c.nvlinkErrors(where, d, l)
		}
		links = append(links, link)
	}
	return links
}

// nvlinkErrors reads an active link's error counters; nil unless every
// one was read (a counter half read cannot be compared).
func (c *collector) nvlinkErrors(where string, d nvml.Device, l int) *NVLinkErrors {
	var e NVLinkErrors
	for _, k := range []struct {
		counter nvml.NvLinkErrorCounter
		into    *uint64
	}{
		{nvml.NVLINK_ERROR_DL_REPLAY, &e.Replay},
		{nvml.NVLINK_ERROR_DL_RECOVERY, &e.Recovery},
		{nvml.NVLINK_ERROR_DL_CRC_FLIT, &e.CRCFlit},
		{nvml.NVLINK_ERROR_DL_CRC_DATA, &e.CRCData},
	} {
		v, ret := d.GetNvLinkErrorCounter(l, k.counter)
		if !c.ok(ret, where, fmt.Sprintf("GetNvLinkErrorCounter(%d, %d)", l, k.counter)) {
			return nil
		}
		*k.into = v
	}
	return &e
}

func remoteType(t nvml.IntNvLinkDeviceType) string {
	switch t {
	case nvml.NVLINK_DEVICE_TYPE_GPU:
		return "gpu"
	case nvml.NVLINK_DEVICE_TYPE_SWITCH:
		return "switch"
	case nvml.NVLINK_DEVICE_TYPE_IBMNPU:
		return "ibmnpu"
	}
	return "unknown"
}

func (c *collector) gpuPairs(devs []nvml.Device) {
	for a := range devs {
		for b := a + 1; b < len(devs); b++ {
			if devs[a] == nil || devs[b] == nil {
				continue
			}
			lvl, ret := devs[a].GetTopologyCommonAncestor(devs[b])
			if !c.ok(ret, fmt.Sprintf("gpu%d", a), fmt.Sprintf("GetTopologyCommonAncestor(gpu%d)", b)) {
				continue
			}
			c.rep.GPUTopology = append(c.rep.GPUTopology, GPUPair{A: a, B: b, Level: nvmlLevel(lvl)})
		}
	}
}

func nvmlLevel(l nvml.GpuTopologyLevel) Level {
	switch l {
	case nvml.TOPOLOGY_INTERNAL:
		return LevelInternal
	case nvml.TOPOLOGY_SINGLE:
		return LevelPIX
	case nvml.TOPOLOGY_MULTIPLE:
		return LevelPXB
	case nvml.TOPOLOGY_HOSTBRIDGE:
		return LevelPHB
	case nvml.TOPOLOGY_NODE:
		return LevelNode
	}
	return LevelSys
}

func (c *collector) nicPairs() {
	if len(c.opts.NICs) == 0 {
		return
	}
	topo := c.opts.Topology
	if topo == nil {
		topo = SysfsTopology{}
	}
	for _, g := range c.rep.GPUs {
		if g.BusID == "" {
			continue
		}
		for _, nic := range c.opts.NICs {
			lvl, err := topo.CommonAncestor(g.BusID, nic.BusID)
			if err != nil {
				c.rep.Warnings = append(c.rep.Warnings, fmt.Sprintf("gpu%d: topology to %s (%s): %v", g.Index, nic.Name, nic.BusID, err))
				continue
			}
			c.rep.NICTopology = append(c.rep.NICTopology, NICPair{GPU: g.Index, NIC: nic.Name, NICBusID: nic.BusID, Level: lvl})
		}
	}
}

// watchXID listens for XID critical errors for the configured window. Only
// XIDs raised after registration are seen; older ones live in the kernel log.
func (c *collector) watchXID(ctx context.Context, devs []nvml.Device) (*XIDWatch, error) {
	set, ret := c.lib.EventSetCreate()
	if !c.ok(ret, "system", "EventSetCreate") {
		return nil, nil
	}
	defer set.Free() //nolint:errcheck // freed with the NVML session at Shutdown if not here
	registered := 0
	for i, d := range devs {
		if d == nil {
			continue
		}
		if c.ok(d.RegisterEvents(nvml.EventTypeXidCriticalError, set), fmt.Sprintf("gpu%d", i), "RegisterEvents") {
			registered++
		}
	}
	if registered == 0 {
		return nil, nil
	}
	w := &XIDWatch{Events: []XIDEvent{}}
	start := time.Now()
	deadline := start.Add(c.opts.XIDWindow)
	// The set is read at least once, however late this goroutine runs:
	// an event already queued when the window opened must not be missed
	// because the process was descheduled past a short deadline.
	for waited := false; ; waited = true {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		left := time.Until(deadline)
		if left <= 0 && waited {
			break
		}
		// Wait in slices of at most one second so cancellation is honoured.
		ms := min(left, time.Second).Milliseconds()
		if ms < 1 {
			ms = 1
		}
		ev, ret := set.Wait(uint32(ms))
		switch {
		case ret == nvml.ERROR_TIMEOUT:
			continue
		case ret != nvml.SUCCESS:
			c.ok(ret, "system", "EventSetWait")
			w.WindowMS = time.Since(start).Milliseconds()
			return w, nil
		}
		if ev.EventType&nvml.EventTypeXidCriticalError == 0 {
			continue
		}
		gpu := -1
		if ev.Device != nil {
			if i, ret := ev.Device.GetIndex(); ret == nvml.SUCCESS {
				gpu = i
			}
		}
		w.Events = append(w.Events, XIDEvent{GPU: gpu, XID: ev.EventData})
	}
	w.WindowMS = c.opts.XIDWindow.Milliseconds()
	return w, nil
}

// cString converts NVML's NUL-terminated int8 arrays into a string.
func cString(b []int8) string {
	var sb strings.Builder
	for _, c := range b {
		if c == 0 {
			break
		}
		sb.WriteByte(byte(c))
	}
	return sb.String()
}

// cpuList renders NVML's CPU bitmask words (64 CPUs per word on 64-bit
// hosts) as a Linux cpulist, e.g. "0-47,96-143".
func cpuList(words []uint) string {
	var cpus []int
	for w, word := range words {
		for word != 0 {
			b := bits.TrailingZeros(word)
			cpus = append(cpus, w*bits.UintSize+b)
			word &^= 1 << uint(b)
		}
	}
	sort.Ints(cpus)
	var parts []string
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if i == j {
			parts = append(parts, strconv.Itoa(cpus[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", cpus[i], cpus[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// virtualizationName names an nvmlGpuVirtualizationMode the way
// nvidia-smi -q does, so both paths report alike.
func virtualizationName(m nvml.GpuVirtualizationMode) string {
	switch m {
	case nvml.GPU_VIRTUALIZATION_MODE_NONE:
		return VirtNone
	case nvml.GPU_VIRTUALIZATION_MODE_PASSTHROUGH:
		return VirtPassThrough
	case nvml.GPU_VIRTUALIZATION_MODE_VGPU:
		return VirtVGPU
	case nvml.GPU_VIRTUALIZATION_MODE_HOST_VGPU:
		return "Host VGPU"
	case nvml.GPU_VIRTUALIZATION_MODE_HOST_VSGA:
		return "Host VSGA"
	}
	return fmt.Sprintf("mode %d", m)
}

// fabricOf turns NVML's fabric info into the words nvidia-smi -q prints in
// its "Fabric" section (State, Status, CliqueId, ClusterUUID).
func fabricOf(v nvml.GpuFabricInfo) *Fabric {
	f := &Fabric{CliqueID: v.CliqueId, ClusterUUID: formatUUID(v.ClusterUuid)}
	switch v.State {
	case nvml.GPU_FABRIC_STATE_NOT_STARTED:
		f.State = "Not Started"
	case nvml.GPU_FABRIC_STATE_IN_PROGRESS:
		f.State = "In Progress"
	case nvml.GPU_FABRIC_STATE_COMPLETED:
		f.State = "Completed"
	default:
		f.State = fmt.Sprintf("unknown (%d)", v.State)
	}
	switch r := nvml.Return(v.Status); r {
	case nvml.SUCCESS:
		f.Status = "Success"
	case nvml.ERROR_INSUFFICIENT_RESOURCES:
		f.Status = "Insufficient Resources"
	default:
		f.Status = fmt.Sprintf("NVML error %d", int32(r))
	}
	return f
}

// formatUUID prints 16 bytes as a UUID, 8-4-4-4-12 hex digits.
func formatUUID(b [16]uint8) string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
