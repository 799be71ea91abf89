package bench

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpuform/gpuform/internal/cmdline"
	"github.com/gpuform/gpuform/provision/bench/tool"
	"github.com/gpuform/gpuform/provision/nodesh"
	"github.com/gpuform/gpuform/provision/transport"
	"github.com/gpuform/gpuform/provision/verify/nccltest"
	"github.com/gpuform/gpuform/spec"
)

// CollectOptions say what Collect measures on a host.
type CollectOptions struct {
	// Layers are the layers to measure.
	Layers []Layer
	// Bench is the node's bench block; nil runs no workload or storage.
	Bench *spec.Bench
	// FioSizeMB is the size of fio's test file; zero means 2048.
	FioSizeMB int
}

// Testcases of nvbandwidth bench runs: copy-engine copies, as AzNHC's and
// DCGM's bandwidth checks use, and the device-local copy for HBM.
const (
	tcLocal = "device_local_copy"
	tcPeer  = "device_to_device_memcpy_read_ce"
	tcH2D   = "host_to_device_memcpy_ce"
	tcD2H   = "device_to_host_memcpy_ce"
)

// Collect runs the measurement tools on one host over t and returns what
// they measured. A missing tool or a failed run is recorded in
// Observations.Missing; Collect fails only when ctx ends.
func Collect(ctx context.Context, t transport.Transport, info HostInfo, o CollectOptions) (Observations, error) {
	obs := Observations{Missing: map[string]Missing{}}
	have, err := installed(ctx, t)
	if err != nil {
		return obs, err
	}
	want := func(l Layer) bool { return slices.Contains(o.Layers, l) }
	missing := func(key, command string) {
		tl, _ := tool.Lookup(command)
		why := fmt.Sprintf("%s is not on the node's PATH: install the %s package (bench { tools = [%q] })", command, tl.Package, tl.Package)
		switch {
		case tl.Package == "":
			why = fmt.Sprintf("%s is not on the node's PATH: no repository is known to package %s; build it from %s and put %s on the PATH", command, tl.Name, tl.Build, command)
		case tl.Build != "":
			why += fmt.Sprintf(", where the node's release packages it; else build it from %s", tl.Build)
		}
		obs.Missing[key] = Missing{Tool: command, Package: tl.Package, Reason: why}
	}
	failed := func(key, command, why string) {
		obs.Missing[key] = Missing{Tool: command, Reason: command + " failed: " + why}
	}

	if want(LayerHBM) || want(LayerGPUGPU) {
		var tcs []string
		if want(LayerHBM) {
			tcs = append(tcs, tcLocal)
		}
		if want(LayerGPUGPU) && len(info.GPUs) > 1 {
			tcs = append(tcs, tcPeer)
		}
		if !have["nvbandwidth"] {
			for _, l := range []Layer{LayerHBM, LayerGPUGPU} {
				if want(l) {
					missing(string(l), "nvbandwidth")
				}
			}
		} else {
			// One run per testcase: older nvbandwidth prints no "Running"
			// line before a matrix, so the run, not the output, says which
			// testcase a matrix is.
			for _, tc := range tcs {
				layer := LayerHBM
				if tc == tcPeer {
					layer = LayerGPUGPU
				}
				ms, why, err := nvbandwidth(ctx, t, "", []string{tc})
				if err != nil {
					return obs, err
				}
				if why != "" || len(ms) == 0 {
					failed(string(layer), "nvbandwidth", firstNonEmpty(why, "no bandwidth matrix in its output"))
					continue
				}
				m := ms[0]
				switch tc {
				case tcLocal:
					obs.HBM = map[int]float64{}
					for _, c := range m.Cols {
						if v, ok := m.Value(firstRow(m), c); ok {
							obs.HBM[c] = v
						}
					}
				case tcPeer:
					obs.Peer = map[Pair]float64{}
					for _, r := range m.Rows {
						for _, c := range m.Cols {
							if v, ok := m.Value(r, c); ok && r != c {
								obs.Peer[Pair{r, c}] = v
							}
						}
					}
				}
			}
		}
	}

	if want(LayerGPUGPU) {
		if !have["all_reduce_perf"] {
			missing("all_reduce", "all_reduce_perf")
		} else {
			obs.AllReduce = map[int]float64{}
			for _, n := range scaleCounts(o.Bench, len(info.GPUs)) {
				if n < 2 {
					continue
				}
				res, err := nccltest.RunTest(ctx, t, strings.Join(tool.AllReducePerfArgs(n), " "), 10*time.Minute)
				if err != nil {
					return obs, err
				}
				if v, ok := peakBusBW(res); ok {
					obs.AllReduce[n] = v
				} else if res.Failure != "" {
					failed("all_reduce", "all_reduce_perf", fmt.Sprintf("-g %d: %s", n, res.Failure))
				}
			}
		}
	}

	if want(LayerHostGPU) {
		switch {
		case !have["nvbandwidth"]:
			missing(string(LayerHostGPU), "nvbandwidth")
		case !have["numactl"] && !have["taskset"]:
			obs.Missing[string(LayerHostGPU)] = Missing{Tool: "numactl", Package: "numactl", Reason: "neither numactl nor taskset is on the node to bind the copies to a NUMA node"}
		default:
			obs.HostToDevice, obs.DeviceToHost = map[int]map[int]float64{}, map[int]map[int]float64{}
			obs.Binding = "taskset"
			if have["numactl"] {
				obs.Binding = "numactl"
			}
			ids := info.NUMAIDs()
			if len(ids) == 0 {
				ids = []int{-1}
			}
			for _, id := range ids {
				for _, tc := range []string{tcH2D, tcD2H} {
					ms, why, err := nvbandwidth(ctx, t, bindPrefix(obs.Binding, id, info.NUMA[id]), []string{tc})
					if err != nil {
						return obs, err
					}
					if why != "" || len(ms) == 0 {
						failed(string(LayerHostGPU), "nvbandwidth", fmt.Sprintf("%s bound to NUMA node %d: %s", tc, id, firstNonEmpty(why, "no bandwidth matrix in its output")))
						continue
					}
					dst := obs.HostToDevice
					if tc == tcD2H {
						dst = obs.DeviceToHost
					}
					if dst[id] == nil {
						dst[id] = map[int]float64{}
					}
					m := ms[0]
					for _, c := range m.Cols {
						if v, ok := m.Value(firstRow(m), c); ok {
							dst[id][c] = v
						}
					}
				}
			}
		}
	}

	if want(LayerNetwork) && len(info.NICs) > 0 {
		if !have["ib_write_bw"] {
			missing(string(LayerNetwork), "ib_write_bw")
		} else if err := nicRing(ctx, t, info, &obs); err != nil {
			return obs, err
		}
	}

	if want(LayerStorage) && o.Bench != nil && len(o.Bench.Storage) > 0 {
		if !have["fio"] {
			missing(string(LayerStorage), "fio")
		} else {
			size := o.FioSizeMB
			if size <= 0 {
				size = 2048
			}
			obs.Storage = map[string]FioResult{}
			for _, s := range o.Bench.Storage {
				r, why, err := fio(ctx, t, s.Path.V, size)
				if err != nil {
					return obs, err
				}
				if why != "" {
					failed(string(LayerStorage), "fio", s.Name+": "+why)
					continue
				}
				obs.Storage[s.Name] = r
			}
		}
	}

	if o.Bench != nil && o.Bench.Command.Set && o.Bench.ThroughputRE != nil {
		obs.Workload = map[int]float64{}
		for _, n := range scaleCounts(o.Bench, len(info.GPUs)) {
			v, why, err := workload(ctx, t, o.Bench, n)
			if err != nil {
				return obs, err
			}
			if why != "" {
				obs.Missing["workload"] = Missing{Tool: "bench command", Reason: fmt.Sprintf("at %d GPUs: %s", n, why)}
				break
			}
			obs.Workload[n] = v
		}
	}
	return obs, nil
}

// toolsPresentScript lists the tools a node has (scripts/tools_present.sh).
//
//go:embed scripts/tools_present.sh
var toolsPresentScript string

// installed lists which of the tools bench uses the node has on PATH.
func installed(ctx context.Context, t transport.Transport) (map[string]bool, error) {
	names := []string{"numactl", "taskset"}
	for _, tl := range tool.Tools() {
		names = append(names, tl.Command)
	}
	// On a simulated node only the root's own stand-ins count: its PATH
	// goes on to this machine's, whose nvbandwidth or fio would measure
	// this machine and write here. On any other node R is empty and every
	// absolute path matches.
	res, err := t.Run(ctx, transport.Command{Script: nodesh.Script(toolsPresentScript, names)})
	if err != nil {
		return nil, err
	}
	have := map[string]bool{}
	for _, l := range strings.Fields(string(res.Stdout)) {
		have[l] = true
	}
	return have, nil
}

// bindPrefix is the command that runs a program with its CPUs (and, with
// numactl, its memory) on NUMA node id. numactl binds memory explicitly;
// taskset (util-linux, on every node) binds the CPUs, and the pinned
// buffers nvbandwidth allocates land on their node by first touch.
func bindPrefix(binding string, id int, cpus string) string {
	if id < 0 {
		return ""
	}
	if binding == "numactl" {
		return fmt.Sprintf("numactl --cpunodebind=%d --membind=%d ", id, id)
	}
	if cpus == "" {
		return ""
	}
	return "taskset -c " + transport.Quote(cpus) + " "
}

// nvbandwidth runs testcases (under prefix, a NUMA binding) and parses
// the matrices. -d turns off nvbandwidth's own CPU affinity, which would
// otherwise undo the binding. why is non-empty when the run failed.
func nvbandwidth(ctx context.Context, t transport.Transport, prefix string, tcs []string) ([]tool.Matrix, string, error) {
	args := append(tool.NvbandwidthArgs(tcs...), "-d")
	script := "export CUDA_DEVICE_ORDER=PCI_BUS_ID\nexec " + prefix + quoteAll(args) + "\n"
	res, err := t.Run(ctx, transport.Command{Script: script})
	if err != nil {
		return nil, "", err
	}
	ms, perr := tool.ParseNvbandwidth(bytes.NewReader(res.Stdout))
	if res.ExitCode != 0 && len(ms) == 0 {
		return nil, fmt.Sprintf("exit status %d: %s", res.ExitCode, lastLine(res.Stderr, res.Stdout)), nil
	}
	if perr != nil && len(ms) == 0 {
		return nil, perr.Error(), nil
	}
	return answered(ms, tcs)
}

// answered keeps the matrices of the testcases asked for. An answer that
// holds only other testcases is refused, not relabelled: a copy-engine
// testcase (_ce) answered by its SM twin (_sm, copies done by kernels)
// measures something else, and judging it against a copy-engine floor
// would pass or fail the wrong thing. A matrix that names no testcase
// (older nvbandwidth prints no "Running" line) is the run's, as asked.
func answered(ms []tool.Matrix, tcs []string) ([]tool.Matrix, string, error) {
	var match, unnamed []tool.Matrix
	var other []string
	for _, m := range ms {
		switch {
		case slices.Contains(tcs, m.Testcase):
			match = append(match, m)
		case m.Testcase == "":
			unnamed = append(unnamed, m)
		case !slices.Contains(other, m.Testcase):
			other = append(other, m.Testcase)
		}
	}
	switch {
	case len(match) > 0:
		return match, "", nil
	case len(other) > 0:
		why := fmt.Sprintf("asked nvbandwidth for %s but it answered %s", strings.Join(tcs, ", "), strings.Join(other, ", "))
		for _, tc := range tcs {
			if twin := strings.TrimSuffix(tc, "_ce") + "_sm"; strings.HasSuffix(tc, "_ce") && slices.Contains(other, twin) {
				why += fmt.Sprintf(" (%s copies with SM kernels, %s with the copy engines: not the same measurement)", twin, tc)
			}
		}
		return nil, why + "; not judged", nil
	}
	return unnamed, "", nil
}

// nicRing runs ib_write_bw between neighbouring NICs of the same link
// layer (mlx5_0→mlx5_1, mlx5_1→mlx5_2, …, the last back to the first),
// server and client on this node. Each NIC takes part in two runs; a run
// goes at the pace of its slower NIC, so a NIC's figure is the better of
// its two, and a single slow NIC stands out while its neighbours do not.
func nicRing(ctx context.Context, t transport.Transport, info HostInfo, obs *Observations) error {
	obs.NICs = map[string]float64{}
	byLayer := map[string][]NIC{}
	var layers []string
	for _, n := range info.NICs {
		if _, ok := byLayer[n.LinkLayer]; !ok {
			layers = append(layers, n.LinkLayer)
		}
		byLayer[n.LinkLayer] = append(byLayer[n.LinkLayer], n)
	}
	port := 18515
	var fails []string
	for _, l := range layers {
		nics := byLayer[l]
		for i, a := range nics {
			b := nics[(i+1)%len(nics)]
			port++
			server := quoteAll(tool.IBWriteBWServerArgs(a.Name, port))
			client := quoteAll(tool.IBWriteBWClientArgs(b.Name, port, "localhost"))
			script := fmt.Sprintf("timeout -k 5 60 %s >/dev/null 2>&1 &\nsrv=$!\nsleep 1\ntimeout -k 5 60 %s\nrc=$?\nwait $srv\nexit $rc\n", server, client)
			res, err := t.Run(ctx, transport.Command{Script: script})
			if err != nil {
				return err
			}
			r, perr := tool.ParseIBWriteBW(bytes.NewReader(res.Stdout))
			if perr != nil || r.AvgGbps <= 0 {
				fails = append(fails, fmt.Sprintf("%s→%s: %s", a.Name, b.Name, firstNonEmpty(errText(perr), lastLine(res.Stderr, res.Stdout))))
				continue
			}
			gbps := r.AvgGbps / 8
			for _, n := range []string{a.Name, b.Name} {
				obs.NICs[n] = math.Max(obs.NICs[n], gbps)
			}
		}
	}
	if len(fails) > 0 {
		obs.Missing[string(LayerNetwork)] = Missing{Tool: "ib_write_bw", Reason: "ib_write_bw failed: " + strings.Join(fails, "; ")}
	}
	return nil
}

// fio writes then reads a test file in dir and removes it; GB/s is
// 10^9 bytes a second (fio's MB/s / 1000).
func fio(ctx context.Context, t transport.Transport, dir string, sizeMB int) (FioResult, string, error) {
	file := path.Join(dir, "gpuform-bench.fio")
	var r FioResult
	for _, rw := range []string{"write", "read"} {
		res, err := t.Run(ctx, transport.Command{Script: "exec " + quoteAll(tool.FioArgs(file, rw, sizeMB)) + "\n"})
		if err != nil {
			return r, "", err
		}
		rs, perr := tool.ParseFioJSON(bytes.NewReader(res.Stdout))
		if perr != nil || len(rs) == 0 {
			return r, firstNonEmpty(errText(perr), lastLine(res.Stderr, res.Stdout), fmt.Sprintf("exit status %d", res.ExitCode)), nil
		}
		if rw == "write" {
			r.WriteGBps = ptr(rs[0].WriteMBps / 1000)
		} else {
			r.ReadGBps = ptr(rs[0].ReadMBps / 1000)
		}
	}
	// Under $GPUFORM_ROOT like every file gpuform touches, so a simulated
	// node's cleanup stays inside its root.
	if _, err := t.Run(ctx, transport.Command{Script: `rm -f "${GPUFORM_ROOT:-}"` + transport.Quote(file) + "\n"}); err != nil {
		return r, "", err
	}
	return r, "", nil
}

// workload runs the spec's bench command at n GPUs and reads its
// throughput: the last match of the spec's pattern in its output.
func workload(ctx context.Context, t transport.Transport, b *spec.Bench, n int) (float64, string, error) {
	words, err := cmdline.Split(strings.ReplaceAll(b.Command.V, spec.BenchPlaceholder, strconv.Itoa(n)))
	if err != nil || len(words) == 0 {
		return 0, fmt.Sprintf("the command does not split into words: %v", err), nil
	}
	env, argv := cmdline.SplitEnv(words)
	script := "exec env " + quoteAll(append(env, argv...)) + "\n"
	res, err := t.Run(ctx, transport.Command{Script: script, Env: map[string]string{"CUDA_VISIBLE_DEVICES": visible(n)}})
	if err != nil {
		return 0, "", err
	}
	out := append(append([]byte(nil), res.Stdout...), res.Stderr...)
	ms := b.ThroughputRE.FindAllSubmatch(out, -1)
	if len(ms) == 0 {
		return 0, fmt.Sprintf("exit status %d and no line matches throughput %q: %s", res.ExitCode, b.Throughput.V, lastLine(res.Stderr, res.Stdout)), nil
	}
	v, err := strconv.ParseFloat(string(ms[len(ms)-1][1]), 64)
	if err != nil {
		return 0, fmt.Sprintf("throughput %q captured %q, not a number", b.Throughput.V, ms[len(ms)-1][1]), nil
	}
	return v, "", nil
}

// scaleCounts are the GPU counts of the scaling curve: the spec's, else
// 1, 2, 4, 8; never more than the node has.
func scaleCounts(b *spec.Bench, gpus int) []int {
	counts := []int{1, 2, 4, 8}
	if b != nil && len(b.GPUs) > 0 {
		counts = counts[:0]
		for _, g := range b.GPUs {
			counts = append(counts, g.V)
		}
		slices.Sort(counts)
	}
	var out []int
	for _, n := range counts {
		if n <= gpus {
			out = append(out, n)
		}
	}
	return out
}

// peakBusBW is the highest out-of-place bus bandwidth of a run: the
// plateau the largest messages reach.
func peakBusBW(res nccltest.Result) (float64, bool) {
	best := 0.0
	for _, r := range res.Runs {
		for _, row := range r.Rows {
			best = math.Max(best, row.OutOfPlace.BusBW)
		}
	}
	return best, best > 0 && res.Failure == ""
}

func visible(n int) string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = strconv.Itoa(i)
	}
	return strings.Join(ids, ",")
}

func firstRow(m tool.Matrix) int {
	if len(m.Rows) == 0 {
		return 0
	}
	return m.Rows[0]
}

func quoteAll(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = transport.Quote(w)
	}
	return strings.Join(q, " ")
}

func lastLine(bufs ...[]byte) string {
	for _, b := range bufs {
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if l := strings.TrimSpace(lines[len(lines)-1]); l != "" {
			return transport.HostText(l)
		}
	}
	return "no output"
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}
