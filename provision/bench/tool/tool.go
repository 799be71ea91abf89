package tool

import (
	"strconv"
)

// Tool names a measurement program and the package that provides it, so a
// layer whose program is missing can say what to install.
type Tool struct {
	// Name is the tool as users know it ("nvbandwidth", "perftest").
	Name string
	// Command is the program bench runs (looked up on the node's PATH).
	Command string
	// Package is the package a spec installs to get Command (bench {
	// tools }): perftest and fio in Debian, Ubuntu and RHEL; nvbandwidth
	// in Debian's and Ubuntu's archives (Ubuntu multiverse, 0.9+ds-2),
	// only in the releases that carry it. "" for nccl-tests, which no
	// distribution or NVIDIA repository is known to package.
	Package string
	// Build is where to build Command from when no package provides it
	// (or the node's release lacks the package).
	Build string
	// Layers are the bench layers the tool measures.
	Layers []string
}

// Tools returns the measurement programs bench knows, in the order of the
// layers they serve. A fresh slice each call: callers may change it.
func Tools() []Tool {
	return []Tool{
		{Name: "nvbandwidth", Command: "nvbandwidth", Package: "nvbandwidth", Build: "https://github.com/NVIDIA/nvbandwidth", Layers: []string{"hbm", "gpu_gpu", "host_gpu"}},
		// perftest ships ib_write_bw in Ubuntu, RHEL and MLNX_OFED/DOCA
		// under the package name perftest.
		{Name: "perftest", Command: "ib_write_bw", Package: "perftest", Layers: []string{"network"}},
		{Name: "fio", Command: "fio", Package: "fio", Layers: []string{"storage"}},
		{Name: "nccl-tests", Command: "all_reduce_perf", Build: "https://github.com/NVIDIA/nccl-tests", Layers: []string{"gpu_gpu", "scaling"}},
	}
}

// Lookup returns the tool whose Name or Command is name.
func Lookup(name string) (Tool, bool) {
	for _, t := range Tools() {
		if t.Name == name || t.Command == name {
			return t, true
		}
	}
	return Tool{}, false
}

// NvbandwidthArgs is the argv that runs the given nvbandwidth testcases
// (all of them when none is given) with text output. Text rather than -j:
// -j exists only from v0.5 on (its release notes, commit d30ed1e), while
// every version prints the matrix layout that ParseNvbandwidth reads.
func NvbandwidthArgs(testcases ...string) []string {
	args := []string{"nvbandwidth"}
	for _, tc := range testcases {
		args = append(args, "-t", tc)
	}
	return args
}

// NvbandwidthJSONArgs is NvbandwidthArgs with -j, for nvbandwidth v0.5 and
// later (read with ParseNvbandwidthJSON).
func NvbandwidthJSONArgs(testcases ...string) []string {
	return append(NvbandwidthArgs(testcases...), "-j")
}

// perftestCommon are the ib_write_bw options both ends must agree on:
// one 8 MiB message size (the size at which perftest's published runs
// reach line rate), a 10 s timed run rather than an iteration count so a
// slow NIC does not stretch the run, --report_gbits so the result is in
// the unit of the NIC's link rate, and -F so a CPU frequency warning does
// not abort the run.
func perftestCommon(dev string, port int) []string {
	return []string{"ib_write_bw", "-d", dev, "-p", strconv.Itoa(port), "-s", "8388608", "-D", "10", "-F", "--report_gbits"}
}

// IBWriteBWServerArgs is the argv of the ib_write_bw server on RDMA
// device dev (mlx5_0), listening for its client on TCP port port (perftest's
// -p; distinct ports let several NIC pairs run at once).
func IBWriteBWServerArgs(dev string, port int) []string {
	return perftestCommon(dev, port)
}

// IBWriteBWClientArgs is the argv of the ib_write_bw client on RDMA device
// dev connecting to the server at address server (a host name or IP; the
// node's own address for a NIC pair inside one node) on TCP port port.
func IBWriteBWClientArgs(dev string, port int, server string) []string {
	return append(perftestCommon(dev, port), server)
}

// FioArgs is the argv of one fio job of rw ("read", "write", or any fio
// rw= mode) over a file of sizeMB MiB at path, with direct I/O so the page
// cache does not stand in for the storage, 1 MiB blocks and queue depth 16
// (sequential throughput, not IOPS), and JSON output for ParseFioJSON.
func FioArgs(path string, rw string, sizeMB int) []string {
	return []string{
		"fio", "--name=gpuform-bench-" + rw, "--filename=" + path, "--rw=" + rw,
		"--size=" + strconv.Itoa(sizeMB) + "M", "--bs=1M", "--iodepth=16", "--ioengine=libaio",
		"--direct=1", "--numjobs=1", "--group_reporting", "--output-format=json",
	}
}

// AllReducePerfArgs is the argv of nccl-tests' all_reduce_perf over gpus
// GPUs of one process (-g), 8 B to 8 GiB doubling, as the scaling curve
// needs; its output is read by provision/verify/nccltest.
func AllReducePerfArgs(gpus int) []string {
	return []string{"all_reduce_perf", "-b", "8", "-e", "8G", "-f", "2", "-g", strconv.Itoa(gpus)}
}

// The nvbandwidth testcases bench runs, by layer. Names as nvbandwidth
// v0.2-v0.10 print them in "Running …" and SUM lines; the HGX H100
// simulated profiles have captures of exactly these.
const (
	// DeviceLocalCopy (hbm) copies between two buffers on one GPU with
	// the copy engine; one matrix row, one column per GPU. The figure is
	// bytes copied a second: every byte is read and written, so the
	// memory moves twice as much (an nvbandwidth maintainer in
	// https://github.com/NVIDIA/nvbandwidth/issues/48: 1.1 TB/s of copy
	// is ~2.2 TB/s of HBM traffic).
	DeviceLocalCopy = "device_local_copy"
	// DeviceToDeviceReadCE and DeviceToDeviceWriteCE (gpu_gpu) copy
	// between every pair of GPUs with peer access: rows and columns are
	// GPUs, the diagonal N/A (0.00 before v0.5).
	DeviceToDeviceReadCE  = "device_to_device_memcpy_read_ce"
	DeviceToDeviceWriteCE = "device_to_device_memcpy_write_ce"
	// HostToDeviceCE and DeviceToHostCE (host_gpu) copy between pinned
	// host memory and each GPU: one row (the CPU), one column per GPU.
	// nvbandwidth binds its host thread to each GPU's CPUs unless run
	// with -d (setOptimalCpuAffinity → nvmlDeviceSetCpuAffinity in its
	// inline_common.h), so a NUMA contrast appends -d and runs under
	// numactl --cpunodebind=N --membind=N.
	HostToDeviceCE = "host_to_device_memcpy_ce"
	DeviceToHostCE = "device_to_host_memcpy_ce"
)
