package slurm

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/gpuform/gpuform/internal/readlimit"
	"github.com/gpuform/gpuform/provision/bench"
	"github.com/gpuform/gpuform/provision/verify/kmsg"
	"github.com/gpuform/gpuform/provision/verify/nccltest"
	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
	"github.com/gpuform/gpuform/provision/verify/report"
)

// A node's report travels back through the srun step's standard output,
// which interleaves the lines of every task. So each node's report is one
// JSON document, gzipped, in base64 lines that each name their node and
// their place ("gpuform-report-v1 NODE SEQ DATA"), closed by a line with
// the count and the SHA-256 of the gzipped bytes ("gpuform-report-v1 NODE
// end COUNT SUM"). Lines of other programs, and lines of a report that
// does not add up, are never taken for a report.
const (
	frameTag = "gpuform-report-v1"
	// chunkLen is the base64 characters per line. slurmstepd sends a
	// task's output to srun in messages of at most 1024 bytes
	// (MAX_MSG_LEN in Slurm's io_hdr.h), a line per message when the
	// line fits; a longer line is cut, and the cut parts of several
	// tasks interleave on srun's output (seen with 1000: "line 1 arrived
	// out of order"). A frame of 512 characters and its header fit.
	chunkLen = 512
	// DefaultReportLimit bounds one node's report as it travels (gzipped,
	// base64): an 8-GPU node's full report is tens of kilobytes.
	DefaultReportLimit = 8 << 20
	// maxLine bounds one line of the step's output; longer ones are not
	// frames and are skipped.
	maxLine = 64 << 10
)

// nodeHost is one host's report as a node sends it: the JSON document's
// host with what it keeps out of that document but the merged report
// needs (NVML for Prometheus and peer outliers, the NCCL results and the
// kernel log's Xids).
type nodeHost struct {
	report.Host
	NVML   *nvmlfacts.Report          `json:"nvml,omitempty"`
	NCCL   map[string]nccltest.Result `json:"nccl,omitempty"`
	Kernel *kmsg.Log                  `json:"kernel,omitempty"`
}

// NodeReport is what verify --local on one node sends back.
type NodeReport struct {
	// Node is the Slurm node it ran on (SLURMD_NODENAME).
	Node string `json:"node"`
	// Hosts are its host's report (one; a list so the envelope can grow).
	Hosts []nodeHost `json:"hosts"`
	// NCCL is the result of a multi-node test or isolation pair this
	// node launched (verify --local -engine-command); nil otherwise.
	NCCL *nccltest.Result `json:"nccl,omitempty"`
	// Bench is the node's bench result (bench -engine-node); nil for
	// verify.
	Bench *bench.NodeResult `json:"bench,omitempty"`
	// NICs are the node's active NICs for the node-to-node pairs (bench
	// -engine-nics); nil otherwise, empty without ib_write_bw.
	NICs *[]bench.NIC `json:"nics,omitempty"`
	// Pair is one end of a node-to-node ib_write_bw run (bench
	// -engine-pair); nil otherwise.
	Pair *PairEnd `json:"pair,omitempty"`
	// Error says why the node could not verify at all ("" when it did):
	// the bundle unreadable, the spec not loading.
	Error string `json:"error,omitempty"`
}

// PairEnd is what one end of a node-to-node run sends back: the
// client's bandwidth, or why the end gave none.
type PairEnd struct {
	GBps float64 `json:"gbps,omitempty"`
	Why  string  `json:"why,omitempty"`
}

// HostReports returns the node's hosts as the merged report holds them.
func (r NodeReport) HostReports() []report.Host {
	out := make([]report.Host, 0, len(r.Hosts))
	for _, h := range r.Hosts {
		rh := h.Host
		rh.NVML, rh.NCCL, rh.Kernel = h.NVML, h.NCCL, h.Kernel
		out = append(out, rh)
	}
	return out
}

// NewNodeReport is the report of node from its verify run's hosts.
func NewNodeReport(node string, hosts []report.Host) NodeReport {
	r := NodeReport{Node: node, Hosts: make([]nodeHost, 0, len(hosts))}
	for _, h := range hosts {
		r.Hosts = append(r.Hosts, nodeHost{Host: h, NVML: h.NVML, NCCL: h.NCCL, Kernel: h.Kernel})
	}
	return r
}

// WriteNodeReport writes r in frames to w (the task's standard output).
func WriteNodeReport(w io.Writer, r NodeReport) error {
	if !validNodeName(r.Node) {
		return fmt.Errorf("node name %q cannot travel in a report frame", r.Node)
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	if err := json.NewEncoder(zw).Encode(r); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	sum := sha256.Sum256(z.Bytes())
	enc := base64.StdEncoding.EncodeToString(z.Bytes())
	bw := bufio.NewWriter(w)
	n := 0
	for i := 0; i < len(enc); i += chunkLen {
		fmt.Fprintf(bw, "%s %s %d %s\n", frameTag, r.Node, n, enc[i:min(i+chunkLen, len(enc))])
		n++
	}
	fmt.Fprintf(bw, "%s %s end %d %s\n", frameTag, r.Node, n, hex.EncodeToString(sum[:]))
	return bw.Flush()
}

// partial is a report being read back.
type partial struct {
	chunks  []string
	size    int
	done    bool
	problem string
}

// ReadNodeReports reads the frames of every node's report from r (the
// step's standard output) until EOF: each node's report bounded by limit
// bytes as it travels (DefaultReportLimit when 0), decoded only when its
// closing line adds up. It returns the reports by node and, for nodes
// whose frames did not make a report, why. A node absent from both sent
// nothing. It reads the whole stream, so the step is never blocked on a
// full pipe; lines past maxLine are skipped unread into memory.
func ReadNodeReports(r io.Reader, limit int) (map[string]NodeReport, map[string]string) {
	if limit <= 0 {
		limit = DefaultReportLimit
	}
	parts := map[string]*partial{}
	br := bufio.NewReaderSize(r, maxLine)
	for {
		line, err := readLine(br)
		if line != "" {
			addFrame(parts, line, limit)
		}
		if err != nil {
			break
		}
	}
	reports := map[string]NodeReport{}
	problems := map[string]string{}
	for node, p := range parts {
		if p.problem == "" && !p.done {
			p.problem = fmt.Sprintf("its report ended after %d line(s), without its closing line (the task was killed or its output cut)", len(p.chunks))
		}
		if p.problem != "" {
			problems[node] = p.problem
			continue
		}
		rep, err := decodeReport(p.chunks, limit)
		if err != nil {
			problems[node] = err.Error()
			continue
		}
		if rep.Node != node {
			problems[node] = fmt.Sprintf("its report names node %q", rep.Node)
			continue
		}
		reports[node] = rep
	}
	return reports, problems
}

// readLine reads one line; a line longer than the reader's buffer is
// discarded whole and returned as "".
func readLine(br *bufio.Reader) (string, error) {
	line, err := br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		for err == bufio.ErrBufferFull {
			_, err = br.ReadSlice('\n')
		}
		return "", err
	}
	return strings.TrimRight(string(line), "\r\n"), err
}

// addFrame files one line of the step's output.
func addFrame(parts map[string]*partial, line string, limit int) {
	f := strings.Fields(line)
	if len(f) < 4 || f[0] != frameTag || !validNodeName(f[1]) {
		return
	}
	node := f[1]
	p := parts[node]
	if p == nil {
		p = &partial{}
		parts[node] = p
	}
	if p.problem != "" || p.done {
		if p.done && p.problem == "" {
			p.problem = "it sent more than one report"
		}
		return
	}
	if f[2] == "end" {
		if len(f) != 5 {
			p.problem = "its closing line is garbled"
			return
		}
		n, err := strconv.Atoi(f[3])
		if err != nil || n != len(p.chunks) {
			p.problem = fmt.Sprintf("its closing line counts %s line(s), %d arrived", f[3], len(p.chunks))
			return
		}
		p.chunks = append(p.chunks, "sha256:"+f[4])
		p.done = true
		return
	}
	seq, err := strconv.Atoi(f[2])
	if err != nil || seq != len(p.chunks) || len(f) != 4 {
		p.problem = fmt.Sprintf("its report's line %s arrived out of order or garbled", f[2])
		return
	}
	p.size += len(f[3])
	if p.size > limit {
		p.problem = fmt.Sprintf("its report passed the limit of %s", readlimit.FormatSize(int64(limit)))
		p.chunks = nil
		return
	}
	p.chunks = append(p.chunks, f[3])
}

// decodeReport checks and decodes a node's chunks (the last is the sum).
func decodeReport(chunks []string, limit int) (NodeReport, error) {
	want := strings.TrimPrefix(chunks[len(chunks)-1], "sha256:")
	z, err := base64.StdEncoding.DecodeString(strings.Join(chunks[:len(chunks)-1], ""))
	if err != nil {
		return NodeReport{}, fmt.Errorf("its report is not base64: %v", err)
	}
	sum := sha256.Sum256(z)
	if hex.EncodeToString(sum[:]) != want {
		return NodeReport{}, fmt.Errorf("its report's SHA-256 does not match its closing line")
	}
	zr, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		return NodeReport{}, fmt.Errorf("its report is not gzip: %v", err)
	}
	// Decompressed, a report may be larger than as it travelled, but
	// not without bound.
	raw, err := readlimit.ReadAll(zr, "the node's report", int64(limit)*8)
	if err != nil {
		return NodeReport{}, err
	}
	var rep NodeReport
	if err := json.Unmarshal(raw, &rep); err != nil {
		return NodeReport{}, fmt.Errorf("its report is not the JSON gpuform writes: %v", err)
	}
	return rep, nil
}

// validNodeName accepts what Slurm node names hold.
func validNodeName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}
