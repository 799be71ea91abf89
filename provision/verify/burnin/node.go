package burnin

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gpuform/gpuform/provision/nodesh"
	"github.com/gpuform/gpuform/provision/transport"
	"github.com/gpuform/gpuform/provision/verify/dcgm"
)

var (
	//go:embed scripts/record_read.sh
	readScript string
	//go:embed scripts/record_write.sh
	writeScript string
	//go:embed scripts/record_remove.sh
	removeScript string
)

// NodeTimeout bounds one read or write of the record on the node.
const NodeTimeout = 30 * time.Second

// ReadRecord reads the node's record bytes, at most MaxRecordBytes+1 of
// them (Parse refuses a file over the bound); found is false when the
// node has no record.
func ReadRecord(ctx context.Context, t transport.Transport) (data []byte, found bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, NodeTimeout)
	defer cancel()
	out, err := t.Run(ctx, transport.Command{Script: nodesh.Script(readScript, []string{Path, strconv.Itoa(MaxRecordBytes)})})
	if err != nil {
		return nil, false, fmt.Errorf("read %s: %w", Path, err)
	}
	switch out.ExitCode {
	case 0:
		if len(out.Stdout) > MaxRecordBytes+1 {
			out.Stdout = out.Stdout[:MaxRecordBytes+1]
		}
		return out.Stdout, true, nil
	case nodesh.ExitNotOffered:
		return nil, false, nil
	}
	return nil, false, fmt.Errorf("read %s: exit %d: %s", Path, out.ExitCode, firstLine(out.Stderr))
}

// WriteRecord writes the record to the node atomically (as root where the
// host has a become method: the record is under /var/lib).
func WriteRecord(ctx context.Context, t transport.Transport, r Record, become bool) error {
	b, err := r.Encode()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, NodeTimeout)
	defer cancel()
	out, err := t.Run(ctx, transport.Command{Script: nodesh.Script(writeScript, []string{Path}), Stdin: bytes.NewReader(b), Become: become})
	if err != nil {
		return fmt.Errorf("write %s: %w", Path, err)
	}
	if out.ExitCode != 0 {
		return fmt.Errorf("write %s: exit %d: %s", Path, out.ExitCode, firstLine(out.Stderr))
	}
	return nil
}

// RemoveRecord removes the node's record before a new burn-in starts (as
// root where the host has a become method), so that a burn-in that does
// not finish (the node lost mid-load, the budget spent, an interrupt)
// leaves the node with no record, refused by -require-burnin, rather
// than with the last one, which qualified the node before whatever made
// it need a new burn-in.
func RemoveRecord(ctx context.Context, t transport.Transport, become bool) error {
	ctx, cancel := context.WithTimeout(ctx, NodeTimeout)
	defer cancel()
	out, err := t.Run(ctx, transport.Command{Script: nodesh.Script(removeScript, []string{Path}), Become: become})
	if err != nil {
		return fmt.Errorf("remove %s: %w", Path, err)
	}
	if out.ExitCode != 0 {
		return fmt.Errorf("remove %s: exit %d: %s", Path, out.ExitCode, firstLine(out.Stderr))
	}
	return nil
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

var (
	//go:embed scripts/load.sh
	loadScript string
	//go:embed scripts/aer_read.sh
	aerScript string
)

// NodeOptions say how to run a burn-in on one node.
type NodeOptions struct {
	// Duration is the sustained load's length (verify { burnin { duration } }).
	Duration time.Duration
	// SampleEvery is the sampling period; zero is SampleEvery.
	SampleEvery time.Duration
	// DCGMOptional lets the node lack dcgmi.
	DCGMOptional bool
	// DCGMTimeout bounds the DCGM run; zero is DCGMTimeout.
	DCGMTimeout time.Duration
}

// DCGMTimeout bounds `dcgmi diag -r 3/4`: level 4 adds DCGM's extended
// memory and stress tests, far longer than level 3; two hours is
// gpuform's bound for 8 GPUs.
const DCGMTimeout = 2 * time.Hour

// DCGMLevel is the DCGM level a burn-in of this length runs: 4 (extended)
// from two hours on, else 3 (long).
func DCGMLevel(d time.Duration) int {
	if d >= 2*time.Hour {
		return 4
	}
	return 3
}

// NCCLBudget is the time all of a node's repeated nccl-tests runs
// share (NCCLIterations of each single-node run).
const NCCLBudget = time.Hour

// Budget is the most one node's burn-in of duration d may take: the
// DCGM run, the load, the repeated NCCL runs and the reads around them.
func Budget(d time.Duration) time.Duration { return DCGMTimeout + d + NCCLBudget + 5*time.Minute }

// RunNode runs a burn-in on the node: the AER counters, `dcgmi diag` at
// DCGMLevel, the sustained load sampled every SampleEvery, the AER
// counters again. An error is a transport failure; a missing tool is
// recorded in the Run, whose Evaluate then does not pass.
func RunNode(ctx context.Context, t transport.Transport, o NodeOptions) (Run, error) {
	r := Run{DCGMOptional: o.DCGMOptional, Duration: o.Duration, SampleEvery: o.SampleEvery}
	var err error
	if r.Before, err = readAER(ctx, t); err != nil {
		return r, err
	}
	dt := o.DCGMTimeout
	if dt <= 0 {
		dt = DCGMTimeout
	}
	res, err := dcgm.Run(ctx, t, DCGMLevel(o.Duration), dt)
	if err != nil {
		return r, err
	}
	switch {
	case res.NotInstalled:
	case res.Diag != nil:
		r.DCGM = res.Diag
	default:
		r.DCGM = &dcgm.Diag{RuntimeError: res.Failure}
	}
	every := o.SampleEvery
	if every <= 0 {
		every = SampleEvery
	}
	secs := max(int64(o.Duration/time.Second), 1)
	lctx, cancel := context.WithTimeout(ctx, o.Duration+2*time.Minute)
	out, err := t.Run(lctx, transport.Command{Script: nodesh.Script(loadScript, []string{strconv.FormatInt(secs, 10), strconv.FormatInt(max(every.Milliseconds(), 1), 10), SampleQuery})})
	cancel()
	if err != nil {
		return r, fmt.Errorf("sustained load: %w", err)
	}
	switch out.ExitCode {
	case 0:
	case nodesh.ExitNotFound:
		r.LoadError = "no sustained load ran: nvidia-smi or DCGM's load generator (dcgmproftester12, dcgmproftester11) is not installed on the node"
	default:
		r.LoadError = fmt.Sprintf("the load generator exited %d: %s", out.ExitCode, firstLine(out.Stderr))
	}
	if r.Samples, err = ParseSamples(out.Stdout); err != nil {
		r.Samples, r.LoadError = nil, "the load's nvidia-smi samples: "+err.Error()
	}
	if r.After, err = readAER(ctx, t); err != nil {
		return r, err
	}
	return r, nil
}

// readAER reads the AER totals of the node's NVIDIA functions.
func readAER(ctx context.Context, t transport.Transport) (map[string]uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, NodeTimeout)
	defer cancel()
	out, err := t.Run(ctx, transport.Command{Script: nodesh.Script(aerScript, nil)})
	if err != nil {
		return nil, fmt.Errorf("read AER counters: %w", err)
	}
	if out.ExitCode != 0 {
		return nil, fmt.Errorf("read AER counters: exit %d: %s", out.ExitCode, firstLine(out.Stderr))
	}
	m := map[string]uint64{}
	for _, line := range strings.Split(string(out.Stdout), "\n") {
		f := strings.Fields(line)
		if len(f) != 4 {
			continue
		}
		if err := AddAER(m, f[0], f[1], []byte(f[2]+" "+f[3])); err != nil {
			return nil, err
		}
	}
	return m, nil
}
