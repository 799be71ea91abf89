package nvmlfacts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ProcessVariables are the environment variables of a GPU process that say
// which NIC it uses: the ones `gpuform bind` sets.
func ProcessVariables() []string {
	return []string{"NCCL_IB_HCA", "UCX_NET_DEVICES"}
}

// Processes is what the agent saw of the compute processes on the GPUs,
// when asked (verify -processes).
type Processes struct {
	// Modelled is true when the process list is a replay (a simulated
	// node), not what a driver reported.
	Modelled bool `json:"modelled,omitempty"`
	// List holds one entry per GPU and process: a process on two GPUs is
	// listed twice.
	List []Process `json:"list"`
}

// Process is one compute process NVML reports on a GPU, with what /proc
// says about its placement.
type Process struct {
	// GPU is the NVML index of the GPU it runs on.
	GPU int `json:"gpu"`
	// PID is the process id (in the agent's PID namespace).
	PID int `json:"pid"`
	// Name is the command name (/proc/PID/status Name).
	Name string `json:"name,omitempty"`
	// CPUsAllowed is /proc/PID/status Cpus_allowed_list.
	CPUsAllowed string `json:"cpus_allowed,omitempty"`
	// MemsAllowed is /proc/PID/status Mems_allowed_list.
	MemsAllowed string `json:"mems_allowed,omitempty"`
	// Env holds the ProcessVariables set in /proc/PID/environ; nil when
	// the environment could not be read.
	Env map[string]string `json:"env,omitempty"`
	// StatusError says why /proc/PID/status could not be read (the
	// process exited, or PID is not visible here); "" when it was.
	StatusError string `json:"status_error,omitempty"`
	// EnvError says why /proc/PID/environ could not be read (another
	// user's process without root: permission denied); "" when it was.
	EnvError string `json:"env_error,omitempty"`
}

// ReadProcess reads pid's placement from /proc under root ("" is /): its
// allowed CPUs and memory nodes, and its ProcessVariables. What cannot be
// read is said in StatusError or EnvError, never left blank in silence.
func ReadProcess(root string, gpu, pid int) Process {
	p := Process{GPU: gpu, PID: pid}
	dir := filepath.Join(root, "/proc", strconv.Itoa(pid))
	status, err := os.ReadFile(filepath.Join(dir, "status"))
	if err != nil {
		p.StatusError = procError(pid, "status", err)
	} else {
		for _, line := range strings.Split(string(status), "\n") {
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			v = strings.TrimSpace(v)
			switch k {
			case "Name":
				p.Name = v
			case "Cpus_allowed_list":
				p.CPUsAllowed = v
			case "Mems_allowed_list":
				p.MemsAllowed = v
			}
		}
		if p.CPUsAllowed == "" {
			p.StatusError = fmt.Sprintf("/proc/%d/status has no Cpus_allowed_list", pid)
		}
	}
	environ, err := os.ReadFile(filepath.Join(dir, "environ"))
	switch {
	case err != nil:
		p.EnvError = procError(pid, "environ", err)
	case len(environ) == 0 && p.StatusError == "":
		// A kernel thread or a zombie has an empty environ; a running
		// job never does (it has at least PATH).
		p.EnvError = fmt.Sprintf("/proc/%d/environ is empty (a zombie or kernel thread)", pid)
	default:
		p.Env = map[string]string{}
		for _, kv := range bytes.Split(environ, []byte{0}) {
			k, v, ok := strings.Cut(string(kv), "=")
			if !ok {
				continue
			}
			for _, want := range ProcessVariables() {
				if k == want {
					p.Env[k] = v
				}
			}
		}
	}
	return p
}

func procError(pid int, file string, err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("process %d exited, or is not visible in this PID namespace (no /proc/%d/%s)", pid, pid, file)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Sprintf("/proc/%d/%s: permission denied (another user's process: run verify as root, or with become = \"sudo\" in the inventory)", pid, file)
	}
	return fmt.Sprintf("/proc/%d/%s: %v", pid, file, err)
}

// SimProcessesFile is where a simulated node's root holds the replayed
// NVML process list: what nvmlDeviceGetComputeRunningProcesses would
// answer on it. Each process's /proc/PID/status and environ are files
// under the same root.
const SimProcessesFile = "/var/lib/gpuform-sim/nvml-processes.json"

// SimProcess is one entry of SimProcessesFile.
type SimProcess struct {
	// GPU is the GPU's NVML index on the node with all its GPUs (the
	// mock layout's): a GPU a fault drops takes its processes with it,
	// and the GPUs NVML renumbers keep theirs.
	GPU int `json:"gpu"`
	// PID is the process id, a directory under the root's /proc.
	PID int `json:"pid"`
	// UsedMemoryMiB is the GPU memory the process holds.
	UsedMemoryMiB uint64 `json:"used_memory_mib,omitempty"`
}

// ReadSimProcesses reads root's SimProcessesFile; none when it is absent.
func ReadSimProcesses(root string) ([]SimProcess, error) {
	data, err := os.ReadFile(filepath.Join(root, SimProcessesFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []SimProcess
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("%s: %w", SimProcessesFile, err)
	}
	return out, nil
}
