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
)

var (
	//go:embed scripts/record_read.sh
	readScript string
	//go:embed scripts/record_write.sh
	writeScript string
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

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}
