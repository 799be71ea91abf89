package bind

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gpuform/gpuform/internal/cpulist"
)

// RankVariables returns the launchers' local-rank variables, in the order
// they are read: torchrun, Slurm (srun), Open MPI, MPICH and Intel MPI.
func RankVariables() []string {
	return []string{"LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID"}
}

// LocalRank reads the process's local rank from the first of
// RankVariables set in environ; from names it.
func LocalRank(environ []string) (rank int, from string, err error) {
	for _, k := range RankVariables() {
		v, ok := lookup(environ, k)
		if !ok {
			continue
		}
		r, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || r < 0 {
			return 0, k, fmt.Errorf("%s=%q is not a local rank (a whole number ≥ 0)", k, v)
		}
		return r, k, nil
	}
	return 0, "", fmt.Errorf("no local rank: none of %s is set; run under torchrun, srun or mpirun, or pick the GPU with -gpu N", strings.Join(RankVariables(), ", "))
}

// Options are what the launcher was asked to do.
type Options struct {
	// GPU is the GPU index from -gpu; negative means "from the local rank".
	GPU int
	// CUDAVisibleDevices sets CUDA_VISIBLE_DEVICES to the GPU.
	CUDAVisibleDevices bool
}

// Launch is a prepared bound start of a command.
type Launch struct {
	// GPU is the chosen GPU.
	GPU GPU
	// Why says how it was chosen ("LOCAL_RANK=3", "-gpu 0").
	Why string
	// CPUs are the CPUs to run on; empty leaves the affinity alone.
	CPUs []int
	// Set are the variables set for the command, KEY=VALUE.
	Set []string
	// Path is the executable; Argv and Env are what it gets.
	Path string
	Argv []string
	Env  []string
}

// Prepare picks the GPU for this process from b and works out everything
// the command will run with; nothing is changed yet.
func Prepare(b *Binding, environ []string, o Options, argv []string) (*Launch, error) {
	if len(argv) == 0 {
		return nil, errors.New("no command to run: gpuform bind [flags] -- COMMAND [ARGS...]")
	}
	if len(b.GPUs) == 0 {
		return nil, fmt.Errorf("the binding of node %q lists no GPUs", b.Node)
	}
	l := &Launch{}
	if o.GPU >= 0 {
		g, ok := b.gpu(o.GPU)
		if !ok {
			return nil, fmt.Errorf("-gpu %d: the binding of node %q has no GPU %d (it has %s)", o.GPU, b.Node, o.GPU, b.indexes())
		}
		l.GPU, l.Why = g, fmt.Sprintf("-gpu %d", o.GPU)
	} else {
		r, from, err := LocalRank(environ)
		if err != nil {
			return nil, err
		}
		if r >= len(b.GPUs) {
			return nil, fmt.Errorf("%s=%d, but the binding of node %q has %d GPUs (local ranks 0-%d): start at most one process per GPU", from, r, b.Node, len(b.GPUs), len(b.GPUs)-1)
		}
		l.GPU, l.Why = b.GPUs[r], fmt.Sprintf("%s=%d", from, r)
	}
	if l.GPU.NUMA != Unbound {
		cpus, err := cpulist.Parse(l.GPU.CPUs)
		if err != nil {
			return nil, fmt.Errorf("GPU %d: cpus %q: %w", l.GPU.Index, l.GPU.CPUs, err)
		}
		if len(cpus) == 0 {
			return nil, fmt.Errorf("GPU %d is bound to NUMA node %d, which has no CPUs (a memory-only node): bind it to a node with CPUs", l.GPU.Index, l.GPU.NUMA)
		}
		l.CPUs = cpus
	}
	if o.CUDAVisibleDevices {
		// NVML numbers GPUs in PCI bus order; CUDA does so only when asked.
		l.Set = append(l.Set, "CUDA_VISIBLE_DEVICES="+strconv.Itoa(l.GPU.Index), "CUDA_DEVICE_ORDER=PCI_BUS_ID")
	}
	l.Set = append(l.Set, l.GPU.Env()...)
	l.Env = setEnv(environ, l.Set)
	path, err := lookPath(argv[0], lookupOr(l.Env, "PATH", ""))
	if err != nil {
		return nil, err
	}
	l.Path, l.Argv = path, argv
	return l, nil
}

func (b *Binding) gpu(index int) (GPU, bool) {
	for _, g := range b.GPUs {
		if g.Index == index {
			return g, true
		}
	}
	return GPU{}, false
}

func (b *Binding) indexes() string {
	var s []string
	for _, g := range b.GPUs {
		s = append(s, strconv.Itoa(g.Index))
	}
	return strings.Join(s, ", ")
}

func lookup(environ []string, key string) (string, bool) {
	for i := len(environ) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(environ[i], "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

func lookupOr(environ []string, key, def string) string {
	if v, ok := lookup(environ, key); ok {
		return v
	}
	return def
}

// setEnv returns environ with each KEY=VALUE of set replacing that key's
// earlier entries, so the command sees one value per key.
func setEnv(environ, set []string) []string {
	keys := map[string]bool{}
	for _, kv := range set {
		k, _, _ := strings.Cut(kv, "=")
		keys[k] = true
	}
	var out []string
	for _, kv := range environ {
		if k, _, _ := strings.Cut(kv, "="); !keys[k] {
			out = append(out, kv)
		}
	}
	return append(out, set...)
}

// lookPath finds name as execvp would, in the PATH the command gets.
func lookPath(name, path string) (string, error) {
	if strings.Contains(name, "/") {
		if err := executable(name); err != nil {
			return "", fmt.Errorf("%s: %w", name, err)
		}
		return name, nil
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		if executable(p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: command not found in PATH", name)
}

func executable(p string) error {
	st, err := os.Stat(p)
	if err != nil {
		return err
	}
	if st.IsDir() || st.Mode().Perm()&0o111 == 0 {
		return fs.ErrPermission
	}
	return nil
}

// SysCPULists reads each NUMA node's cpulist from the sysfs under root
// ("/" on the node itself): what the launcher binds to when it computes
// the binding from a spec on the node.
func SysCPULists(root string) CPULists {
	return func(numa int) (string, bool) {
		b, err := os.ReadFile(filepath.Join(root, "sys/devices/system/node", "node"+strconv.Itoa(numa), "cpulist"))
		if err != nil {
			return "", false
		}
		return strings.TrimSpace(string(b)), true
	}
}
