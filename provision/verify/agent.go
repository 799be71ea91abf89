package verify

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/gpuform/gpuform/internal/text"
	"github.com/gpuform/gpuform/provision/transport"
	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
	"github.com/gpuform/gpuform/provision/verify/smi"
)

// AgentCacheDir is where agent binaries are kept on a node, under the
// login user's home directory; each file is named after its checksum.
const AgentCacheDir = ".cache/gpuform"

// EnsureAgent makes sure the node behind t has an exact copy of
// localBinary in ~/.cache/gpuform/agent-<sha256>. It uploads the binary
// over the open connection (stdin of one remote command: write to a
// temporary file, chmod, rename) only when the remote copy is missing or its
// checksum differs, and verifies the checksum after uploading. It returns
// the remote path and whether an upload happened.
func EnsureAgent(ctx context.Context, t transport.Transport, localBinary string) (remotePath string, uploaded bool, err error) {
	return EnsureAgentIn(ctx, t, localBinary, "")
}

// EnsureAgentIn is EnsureAgent with another cache directory on the node;
// "" means ~/.cache/gpuform.
func EnsureAgentIn(ctx context.Context, t transport.Transport, localBinary, dir string) (remotePath string, uploaded bool, err error) {
	data, err := os.ReadFile(localBinary)
	if err != nil {
		return "", false, fmt.Errorf("reading the agent binary: %w", err)
	}
	sum := sha256.Sum256(data)
	want := hex.EncodeToString(sum[:])
	// The default directory needs $HOME expanded by the remote shell; a
	// given one is quoted. The checksum is hex, safe as it is.
	dirExpr := `"$HOME/` + AgentCacheDir + `"`
	if dir != "" {
		dirExpr = transport.Quote(dir)
	}
	name := "agent-" + want

	probe := "d=" + dirExpr + "\nf=\"$d/" + name + "\"\nprintf '%s\\n' \"$f\"\nif [ -f \"$f\" ]; then sha256sum < \"$f\"; fi\n"
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

	upload := "set -e\numask 077\nd=" + dirExpr + "\nmkdir -p \"$d\"\n" +
		"tmp=\"$d/." + name + ".$$\"\ntrap 'rm -f \"$tmp\"' EXIT\n" +
		"cat > \"$tmp\"\nchmod 0700 \"$tmp\"\nmv -f \"$tmp\" \"$d/" + name + "\"\nsha256sum < \"$d/" + name + "\"\n"
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
	// Agent is rendered as the agent's flags (nvmlfacts.AgentCommand()
	// followed by Agent.Args()) when AgentArgs is nil.
	Agent nvmlfacts.AgentOptions
	// AgentArgs, when set, are the agent's whole argument list instead.
	AgentArgs []string
	// CacheDir is passed to EnsureAgentIn.
	CacheDir string
}

// FetchNVML reads a node's NVML facts: through the agent when it can be
// copied and run there, else from `nvidia-smi -q -x`. The returned report's
// Source says which path was used, and its Warnings say why the agent was
// not used. The error, when both paths fail, carries both reasons; callers
// put it in HostFacts.NVMLError.
func FetchNVML(ctx context.Context, t transport.Transport, opts FetchOptions) (*nvmlfacts.Report, error) {
	var agentErr error
	if opts.LocalBinary != "" {
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
	res, err := t.Run(ctx, transport.Command{Script: smi.Command})
	if err != nil {
		return nil, fmt.Errorf("%v; nvidia-smi fallback: %w", agentErr, err)
	}
	if res.ExitCode != 0 {
		return nil, fmt.Errorf("%v; nvidia-smi fallback: exit %d: %s", agentErr, res.ExitCode, cmp.Or(text.FirstLine(string(res.Stdout)), text.FirstLine(string(res.Stderr))))
	}
	rep, err := smi.Parse(res.Stdout)
	if err != nil {
		return nil, fmt.Errorf("%v; nvidia-smi fallback: %w", agentErr, err)
	}
	rep.Warnings = append(rep.Warnings, "NVML agent not used: "+agentErr.Error())
	// The topology matrix gives the fallback the GPU pair, GPU–NIC and
	// NUMA facts; without it those checks are skipped as before.
	res, err = t.Run(ctx, transport.Command{Script: smi.TopoCommand})
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
