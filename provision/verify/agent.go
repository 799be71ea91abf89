package verify

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/gpuform/gpuform/internal/text"
	"github.com/gpuform/gpuform/provision/nodesh"
	"github.com/gpuform/gpuform/provision/transport"
	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
	"github.com/gpuform/gpuform/provision/verify/smi"
)

// AgentCacheDir is where agent binaries are kept on a node, under the
// login user's home directory; each file is named after its checksum.
const AgentCacheDir = ".cache/gpuform"

// EnsureAgentIn makes sure the node behind t has an exact copy of
// localBinary in dir/agent-<sha256> ("" means ~/.cache/gpuform). It uploads
// the binary over the open connection (stdin of one remote command: write to
// a temporary file, chmod, rename) only when the remote copy is missing or
// its checksum differs, and verifies the checksum after uploading. It
// returns the remote path and whether an upload happened.
func EnsureAgentIn(ctx context.Context, t transport.Transport, localBinary, dir string) (remotePath string, uploaded bool, err error) {
	data, err := os.ReadFile(localBinary)
	if err != nil {
		return "", false, fmt.Errorf("reading the agent binary: %w", err)
	}
	sum := sha256.Sum256(data)
	want := hex.EncodeToString(sum[:])
	// The default directory needs $HOME expanded by the remote shell
	// (scripts/agent.sh does); a given one is used as it is.
	name := "agent-" + want
	probe := nodesh.Script(agentScript, []string{"find", dir, AgentCacheDir, name})
	res, err := t.Run(ctx, transport.Command{Script: probe})
	if err != nil {
		return "", false, err
	}
	lines := strings.Split(strings.TrimSpace(string(res.Stdout)), "\n")
	if res.ExitCode != 0 || len(lines) == 0 || lines[0] == "" {
		return "", false, fmt.Errorf("looking for the agent on %s failed (exit %d): %s", t.Host(), res.ExitCode, strings.TrimSpace(string(res.Stderr)))
	}
	remotePath = lines[0]
	if len(lines) > 1 && firstField(lines[1]) == want {
		return remotePath, false, nil
	}

	upload := nodesh.Script(agentScript, []string{"upload", dir, AgentCacheDir, name})
	res, err = t.Run(ctx, transport.Command{Script: upload, Stdin: bytes.NewReader(data)})
	if err != nil {
		return "", false, err
	}
	if res.ExitCode != 0 {
		return "", false, fmt.Errorf("uploading the agent to %s failed (exit %d): %s", t.Host(), res.ExitCode, strings.TrimSpace(string(res.Stderr)))
	}
	if got := firstField(strings.TrimSpace(string(res.Stdout))); got != want {
		return "", true, fmt.Errorf("agent checksum on %s is %q after upload, want %s: the copy is corrupt", t.Host(), got, want)
	}
	return remotePath, true, nil
}

func firstField(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// FetchOptions say how FetchNVML reads a node's NVML facts.
type FetchOptions struct {
	// LocalBinary is the agent to copy to the node (normally the running
	// gpuform executable); "" goes straight to the nvidia-smi fallback.
	LocalBinary string
	// NoAgent, when set, says why the agent is not tried on this node
	// (LocalBinary is then ignored): the fallback's warning gives it.
	NoAgent string
	// Agent is rendered as the agent's flags (nvmlfacts.AgentCommand()
	// followed by Agent.Args()) when AgentArgs is nil.
	Agent nvmlfacts.AgentOptions
	// AgentArgs, when set, are the agent's whole argument list instead.
	AgentArgs []string
	// CacheDir is passed to EnsureAgentIn.
	CacheDir string
	// SMITimeout bounds each nvidia-smi run of the fallback; 0 means
	// DefaultSMITimeout.
	SMITimeout time.Duration
}

// DefaultSMITimeout is how long one nvidia-smi run may take. It answers in
// seconds on a healthy node; a GPU that stopped responding hangs it for
// good, and the tier's budget should not go to waiting for it.
const DefaultSMITimeout = 30 * time.Second

// FetchNVML reads a node's NVML facts: through the agent when it can be
// copied and run there, else from `nvidia-smi -q -x`. The returned report's
// Source says which path was used, and its Warnings say why the agent was
// not used. The error, when both paths fail, carries both reasons; callers
// put it in HostFacts.NVMLError.
func FetchNVML(ctx context.Context, t transport.Transport, opts FetchOptions) (*nvmlfacts.Report, error) {
	var agentErr error
	if opts.NoAgent != "" {
		agentErr = errors.New(opts.NoAgent)
	} else if opts.LocalBinary != "" {
		rep, err := runAgent(ctx, t, opts)
		if err == nil {
			return rep, nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
		agentErr = err
	} else {
		agentErr = errors.New("no agent binary for this node")
	}
	res, err := runSMI(ctx, t, smi.Command, opts.SMITimeout)
	if err != nil {
		return nil, diagnose(ctx, t, agentErr, err)
	}
	if res.ExitCode != 0 {
		return nil, diagnose(ctx, t, agentErr, fmt.Errorf("exit %d: %s", res.ExitCode, cmp.Or(text.FirstLine(string(res.Stdout)), text.FirstLine(string(res.Stderr)))))
	}
	rep, err := smi.Parse(res.Stdout)
	if err != nil {
		return nil, fmt.Errorf("%v; nvidia-smi fallback: %w", agentErr, err)
	}
	rep.Warnings = append(rep.Warnings, "NVML agent not used: "+agentErr.Error())
	// The topology matrix gives the fallback the GPU pair, GPU–NIC and
	// NUMA facts; without it those checks are skipped as before.
	res, err = runSMI(ctx, t, smi.TopoCommand, opts.SMITimeout)
	switch {
	case err != nil:
		rep.Warnings = append(rep.Warnings, smi.TopoCommand+": "+err.Error())
	case res.ExitCode != 0:
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s: exit %d: %s", smi.TopoCommand, res.ExitCode, cmp.Or(text.FirstLine(string(res.Stdout)), text.FirstLine(string(res.Stderr)))))
	default:
		if top, err := smi.ParseTopo(res.Stdout); err != nil {
			rep.Warnings = append(rep.Warnings, err.Error())
		} else {
			top.Apply(rep)
		}
	}
	return rep, nil
}

// runSMI runs one nvidia-smi command within limit (DefaultSMITimeout when
// 0) and says so in words when it hung, rather than "context deadline
// exceeded".
func runSMI(ctx context.Context, t transport.Transport, script string, limit time.Duration) (transport.Result, error) {
	if limit <= 0 {
		limit = DefaultSMITimeout
	}
	start := time.Now()
	sctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	res, err := t.Run(sctx, transport.Command{Script: script})
	if err != nil && errors.Is(sctx.Err(), context.DeadlineExceeded) && !errors.Is(ctx.Err(), context.Canceled) {
		return res, fmt.Errorf("%s hung: no answer after %s, stopped (a GPU that stopped responding hangs nvidia-smi: look for XID 79 or 119 in dmesg)",
			script, time.Since(start).Round(time.Second))
	}
	return res, err
}

// busScript counts the NVIDIA VGA and 3D controllers on the PCI bus and
// says whether nvidia-smi is installed (scripts/gpu_bus.sh).
//
//go:embed scripts/gpu_bus.sh
var busScript string

// agentScript finds and uploads the agent binary (scripts/agent.sh).
//
//go:embed scripts/agent.sh
var agentScript string

// diagnose explains why neither the agent nor nvidia-smi produced facts,
// leading with what is true of the node: no NVIDIA GPU on the PCI bus, or
// GPUs without the driver's tools; else both paths' own reasons.
func diagnose(ctx context.Context, t transport.Transport, agentErr, smiErr error) error {
	plain := fmt.Errorf("%v; nvidia-smi fallback: %w", agentErr, smiErr)
	if ctx.Err() != nil {
		return plain
	}
	res, err := t.Run(ctx, transport.Command{Script: nodesh.Script(busScript, nil)})
	if err != nil || res.ExitCode != 0 {
		return plain
	}
	gpus, smiInstalled := -1, true
	for _, l := range strings.Split(string(res.Stdout), "\n") {
		if n, ok := strings.CutPrefix(l, "gpus "); ok {
			_, _ = fmt.Sscan(n, &gpus) // not a number: gpus stays -1, unknown
		}
		if l == "smi no" {
			smiInstalled = false
		}
	}
	smiWhy := smiErr.Error()
	if !smiInstalled {
		smiWhy = "not installed"
	}
	switch {
	case gpus == 0:
		return fmt.Errorf("no NVIDIA GPU on the PCI bus (no device of vendor 0x10de, class 0x0300/0x0302; NVML agent: %v; nvidia-smi: %s)", agentErr, smiWhy)
	case gpus > 0 && !smiInstalled:
		return fmt.Errorf("%d NVIDIA GPU(s) on the PCI bus, but nvidia-smi is not installed and the NVML agent could not run (%v): install the NVIDIA driver", gpus, agentErr)
	}
	return plain
}

func runAgent(ctx context.Context, t transport.Transport, opts FetchOptions) (*nvmlfacts.Report, error) {
	path, _, err := EnsureAgentIn(ctx, t, opts.LocalBinary, opts.CacheDir)
	if err != nil {
		return nil, err
	}
	args := opts.AgentArgs
	if args == nil {
		args = append(nvmlfacts.AgentCommand(), opts.Agent.Args()...)
	}
	script := transport.Quote(path)
	for _, a := range args {
		script += " " + transport.Quote(a)
	}
	res, err := t.Run(ctx, transport.Command{Script: script})
	if err != nil {
		return nil, err
	}
	if res.ExitCode != 0 {
		// 126: exec format error (another CPU architecture), 127: missing
		// shared library or loader (old glibc), else the agent's own error.
		return nil, fmt.Errorf("agent exited %d: %s", res.ExitCode, cmp.Or(text.FirstLine(string(res.Stderr)), text.FirstLine(string(res.Stdout))))
	}
	return nvmlfacts.Decode(res.Stdout)
}
