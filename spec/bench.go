package spec

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/gpuform/gpuform/internal/lazyre"
)

// Bench is a node's bench block: what `gpuform bench` runs beside its
// bandwidth layers (a workload command at each GPU count, the storage
// paths to measure) and its time budget per host.
type Bench struct {
	// Command is the workload, run on the node once per GPU count with
	// "{gpus}" replaced by the count; unset runs no workload.
	Command Attr[string]
	// Throughput is a regular expression with one capture group: the
	// workload's throughput, read from the last match in its output.
	Throughput Attr[string]
	// ThroughputRE is Throughput compiled; nil when unset or invalid.
	ThroughputRE *regexp.Regexp
	// GPUs are the GPU counts of the scaling curve; empty means 1, 2, 4, 8
	// (those up to the node's GPUs).
	GPUs []Attr[int]
	// Timeout is the time budget per host ("30m"); zero means bench's
	// default.
	Timeout Attr[time.Duration]
	// Storage are the paths whose sequential throughput bench measures.
	Storage []*BenchStorage
	// Tools are the measurement tools apply installs as packages
	// (BenchTools names them), each once, in the spec's order.
	Tools []Attr[string]
	// Checkpoint is how the workload checkpoints and resumes, for
	// gpuform drill's checkpoint-restore drill; nil when the spec does
	// not say.
	Checkpoint *BenchCheckpoint
	// DeclRange is the range of the block header.
	DeclRange hcl.Range
}

// BenchCheckpoint is bench's checkpoint block: the drill runs the bench
// command, kills it (SIGKILL, as a node loss does) after KillAfter, runs
// ResumeCommand and judges that it resumed from a checkpoint at a step
// above 0 and that its throughput is within MaxThroughputLoss of the
// throughput before the kill.
type BenchCheckpoint struct {
	// ResumeCommand restarts the workload from its checkpoint; the same
	// characters as the bench command, "{gpus}" replaced by GPUs.
	ResumeCommand Attr[string]
	// Resumed is a regular expression with one capture group: the step
	// the resumed run says it resumed from (its first match).
	Resumed Attr[string]
	// ResumedRE is Resumed compiled; nil when unset or invalid.
	ResumedRE *regexp.Regexp
	// Dir, when set, is the absolute directory the workload writes its
	// checkpoint in: the drill checks a file there was written by the
	// killed run.
	Dir Attr[string]
	// KillAfter is how long the first run runs before it is killed;
	// DefaultKillAfter when unset.
	KillAfter Attr[time.Duration]
	// MaxThroughputLoss is the fraction of the throughput before the kill
	// the resumed run may lose (0.1: at least 90 %);
	// DefaultMaxThroughputLoss when unset.
	MaxThroughputLoss Attr[float64]
	// GPUs is the GPU count both runs use for {gpus}; unset is the
	// largest of bench's gpus, else the node's.
	GPUs Attr[int]
	// Timeout bounds the resumed run, which is killed past it and judged
	// by its output so far; DefaultResumeTimeout when unset.
	Timeout Attr[time.Duration]
	// DeclRange is the range of the block header.
	DeclRange hcl.Range
}

// The checkpoint drill's defaults.
const (
	DefaultKillAfter         = 30 * time.Second
	DefaultMaxThroughputLoss = 0.1
	DefaultResumeTimeout     = 10 * time.Minute
)

// BenchStorage is a storage block of bench: a path (a dataset or
// checkpoint directory) and the floors its fio throughput is judged by.
type BenchStorage struct {
	// Name is the block label ("dataset", "checkpoint").
	Name string
	// Path is the absolute directory fio writes its test file in.
	Path Attr[string]
	// MinReadGBps and MinWriteGBps are the floors in GB/s; unset reports
	// the measurement without a verdict.
	MinReadGBps  Attr[float64]
	MinWriteGBps Attr[float64]
	// DeclRange is the range of the block header.
	DeclRange hcl.Range
}

var (
	benchSchema = &hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "command"}, {Name: "throughput"}, {Name: "gpus"}, {Name: "timeout"}, {Name: "tools"}},
		Blocks:     []hcl.BlockHeaderSchema{{Type: "storage", LabelNames: []string{"name"}}, {Type: "checkpoint"}},
	}
	benchCheckpointSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
		{Name: "resume_command", Required: true}, {Name: "resumed", Required: true}, {Name: "dir"},
		{Name: "kill_after"}, {Name: "max_throughput_loss"}, {Name: "gpus"}, {Name: "timeout"},
	}}
	benchStorageSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
		{Name: "path", Required: true}, {Name: "min_read_gbps"}, {Name: "min_write_gbps"},
	}}
	// benchCommandPattern is nccl-tests' pattern plus ":" and the {gpus}
	// placeholder: the command runs on the node through a shell, so
	// nothing a shell treats as syntax is allowed.
	benchCommandPattern = lazyre.New(`^([A-Za-z0-9_./=,: \-]|\{gpus\})+$`)
	benchPathPattern    = lazyre.New(`^/[A-Za-z0-9_./\-]*$`)
)

// BenchPlaceholder is replaced by the GPU count in a bench command.
const BenchPlaceholder = "{gpus}"

// BenchTools are the names bench { tools } accepts: the measurement tools
// a distribution packages under that name (perftest for ib_write_bw,
// fio; nvbandwidth in Debian's and Ubuntu's archives where the release
// carries it). nccl-tests is not among them: no distribution or NVIDIA
// repository is known to package it (see BenchToolUnpackaged).
func BenchTools() []string { return []string{"perftest", "fio", "nvbandwidth"} }

// BenchToolUnpackaged maps a tool bench uses that no known repository
// packages to how to get it.
func BenchToolUnpackaged() map[string]string {
	return map[string]string{
		"nccl-tests": "build it from https://github.com/NVIDIA/nccl-tests (make MPI=1 CUDA_HOME=... NCCL_HOME=...) and put all_reduce_perf on the node's PATH",
	}
}

func decodeBench(blk *hcl.Block, ctx *hcl.EvalContext) (*Bench, hcl.Diagnostics) {
	dec, content := blockDecoder(blk, benchSchema, ctx)
	b := &Bench{DeclRange: blk.DefRange}
	b.Command = dec.string("command")
	safeBenchCommand(dec, &b.Command, "Invalid bench command", "The command may contain only the program name, its arguments (letters, digits, spaces and - _ . / = , :) and {gpus}; shell syntax such as ; | $ or quotes is refused because the command runs on the node.")
	b.Throughput = dec.string("throughput")
	b.ThroughputRE = oneGroupPattern(dec, b.Throughput, "Invalid throughput pattern", "the number", "samples/s: ([0-9.]+)")
	switch {
	case b.Command.Set && !b.Throughput.Set && !dec.diags.HasErrors():
		dec.diags = append(dec.diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Missing throughput pattern",
			Detail:   "A bench command needs throughput = \"REGEX\" with one capture group, to read the workload's throughput at each GPU count.",
			Subject:  b.Command.Range.Ptr(),
		})
	case b.Throughput.Set && !b.Command.Set && !dec.diags.HasErrors():
		dec.diags = append(dec.diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Missing bench command",
			Detail:   "throughput reads the output of the bench command; add command = \"... {gpus} ...\".",
			Subject:  b.Throughput.Range.Ptr(),
		})
	case b.Command.Set && !strings.Contains(b.Command.V, BenchPlaceholder):
		dec.diags = append(dec.diags, &hcl.Diagnostic{
			Severity: hcl.DiagWarning,
			Summary:  "Bench command without {gpus}",
			Detail:   "Without {gpus} the command runs the same way at every GPU count, and the scaling efficiency means nothing. Write it where the GPU count goes, as in --nproc_per_node={gpus}.",
			Subject:  b.Command.Range.Ptr(),
		})
	}
	b.GPUs, _ = dec.intList("gpus", 1, 1024)
	seen := map[int]bool{}
	for _, g := range b.GPUs {
		if seen[g.V] {
			dec.diags = append(dec.diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  `Duplicate value in "gpus"`,
				Detail:   fmt.Sprintf("%d GPUs is listed twice.", g.V),
				Subject:  g.Range.Ptr(),
			})
		}
		seen[g.V] = true
	}
	if t := dec.string("timeout"); t.Set {
		d, ok := parseDuration(t.V, 1, math.MaxInt64)
		if !ok {
			dec.diags = append(dec.diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid timeout",
				Detail:   fmt.Sprintf("%s is not a duration like \"20m\".", t.Show()),
				Subject:  t.Range.Ptr(),
			})
		} else {
			b.Timeout = Attr[time.Duration]{V: d.D, Set: true, Range: t.Range}
		}
	}
	tools, _ := dec.stringList("tools")
	seenTool := map[string]bool{}
	for _, t := range tools {
		hint, unpackaged := BenchToolUnpackaged()[t.V]
		switch {
		case unpackaged:
			dec.diags = append(dec.diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Bench tool without a package",
				Detail:   fmt.Sprintf("%s is not packaged by any repository gpuform knows, so apply cannot install it: %s.", t.Show(), hint),
				Subject:  t.Range.Ptr(),
			})
		case !slices.Contains(BenchTools(), t.V):
			dec.diags = append(dec.diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Unknown bench tool",
				Detail:   fmt.Sprintf("%s is not a measurement tool bench installs; tools are %s.", t.Show(), strings.Join(BenchTools(), ", ")),
				Subject:  t.Range.Ptr(),
			})
		case seenTool[t.V]:
			dec.diags = append(dec.diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  `Duplicate value in "tools"`,
				Detail:   fmt.Sprintf("%s is listed twice.", t.Show()),
				Subject:  t.Range.Ptr(),
			})
		default:
			seenTool[t.V] = true
			b.Tools = append(b.Tools, t)
		}
	}
	names := map[string]hcl.Range{}
	for _, sb := range content.Blocks {
		if sb.Type == "checkpoint" {
			if b.Checkpoint != nil {
				dec.diags = append(dec.diags, duplicateDiag("checkpoint", "", sb.DefRange, b.Checkpoint.DeclRange))
				continue
			}
			c, cd := decodeBenchCheckpoint(sb, ctx)
			dec.diags = append(dec.diags, cd...)
			b.Checkpoint = c
			continue
		}
		name := sb.Labels[0]
		if prev, dup := names[name]; dup {
			dec.diags = append(dec.diags, duplicateDiag("storage", name, sb.LabelRanges[0], prev))
			continue
		}
		names[name] = sb.DefRange
		sd, _ := blockDecoder(sb, benchStorageSchema, ctx)
		s := &BenchStorage{Name: name, DeclRange: sb.DefRange}
		s.Path = sd.string("path")
		safeBenchDir(sd, &s.Path, "Invalid storage path", "fio writes its test file there")
		s.MinReadGBps = sd.float("min_read_gbps", 0, 10000)
		s.MinWriteGBps = sd.float("min_write_gbps", 0, 10000)
		dec.diags = append(dec.diags, sd.diags...)
		b.Storage = append(b.Storage, s)
	}
	if b.Checkpoint != nil && !b.Command.Set && !dec.diags.HasErrors() {
		dec.diags = append(dec.diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Checkpoint without a workload",
			Detail:   "The checkpoint drill runs the bench command, kills it and resumes it; add command = \"...\" and throughput = \"REGEX\" to bench.",
			Subject:  b.Checkpoint.DeclRange.Ptr(),
		})
	}
	return b, dec.diags
}

// decodeBenchCheckpoint decodes bench's checkpoint block.
func decodeBenchCheckpoint(blk *hcl.Block, ctx *hcl.EvalContext) (*BenchCheckpoint, hcl.Diagnostics) {
	dec, _ := blockDecoder(blk, benchCheckpointSchema, ctx)
	c := &BenchCheckpoint{DeclRange: blk.DefRange}
	c.ResumeCommand = dec.string("resume_command")
	safeBenchCommand(dec, &c.ResumeCommand, "Invalid resume command", "The resume command may contain only the program name, its arguments (letters, digits, spaces and - _ . / = , :) and {gpus}, as the bench command; shell syntax such as ; | $ or quotes is refused because the command runs on the node.")
	c.Resumed = dec.string("resumed")
	c.ResumedRE = oneGroupPattern(dec, c.Resumed, "Invalid resumed pattern", "the step", "resumed from step ([0-9]+)")
	c.Dir = dec.string("dir")
	safeBenchDir(dec, &c.Dir, "Invalid checkpoint directory", "the directory the workload writes its checkpoint in")
	duration := func(name, example string) Attr[time.Duration] {
		t := dec.string(name)
		if !t.Set {
			return Attr[time.Duration]{Range: t.Range}
		}
		d, ok := parseDuration(t.V, time.Second, 24*time.Hour)
		if !ok {
			dec.diags = append(dec.diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  fmt.Sprintf("Invalid %s", name),
				Detail:   fmt.Sprintf("%s is not a duration from 1s to 24h, like %q.", t.Show(), example),
				Subject:  t.Range.Ptr(),
			})
			return Attr[time.Duration]{Range: t.Range}
		}
		return Attr[time.Duration]{V: d.D, Set: true, Range: t.Range}
	}
	c.KillAfter = duration("kill_after", "30s")
	c.MaxThroughputLoss = dec.float("max_throughput_loss", 0, 0.99)
	c.GPUs = dec.int("gpus", 1, 1024)
	c.Timeout = duration("timeout", "10m")
	return c, dec.diags
}

// safeBenchCommand refuses a command (bench's, or its checkpoint's resume
// command) that holds more than benchCommandPattern allows, with summary
// and detail, at the attribute; a refused command is left unset.
func safeBenchCommand(dec *attrDecoder, cmd *Attr[string], summary, detail string) {
	if cmd.Set && !benchCommandPattern.MatchString(cmd.V) {
		dec.diags = append(dec.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: cmd.Range.Ptr()})
		cmd.Set = false
	}
}

// oneGroupPattern compiles a pattern that reads one value (what, as in
// example) out of a workload's output: a regular expression with exactly
// one capture group. nil, with the error at the attribute, otherwise.
func oneGroupPattern(dec *attrDecoder, pat Attr[string], summary, what, example string) *regexp.Regexp {
	if !pat.Set {
		return nil
	}
	re, err := regexp.Compile(pat.V)
	switch {
	case err != nil:
		dec.diags = append(dec.diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  summary,
			Detail:   fmt.Sprintf("%s is not a regular expression (Go RE2 syntax): %v.", pat.Show(), err),
			Subject:  pat.Range.Ptr(),
		})
	case re.NumSubexp() != 1:
		dec.diags = append(dec.diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  summary,
			Detail:   fmt.Sprintf("%s has %d capture groups; write exactly one around %s, as in %q.", pat.Show(), re.NumSubexp(), what, example),
			Subject:  pat.Range.Ptr(),
		})
	default:
		return re
	}
	return nil
}

// safeBenchDir refuses a directory a bench part works in (storage's
// path, the checkpoint's dir) that is not an absolute path of
// benchPathPattern's characters without a ".." step, naming why the
// directory matters (why); a refused one is left unset.
func safeBenchDir(dec *attrDecoder, dir *Attr[string], summary, why string) {
	if dir.Set && (!benchPathPattern.MatchString(dir.V) || slices.Contains(strings.Split(dir.V, "/"), "..")) {
		dec.diags = append(dec.diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  summary,
			Detail:   fmt.Sprintf("%s is not an absolute directory path of letters, digits and - _ . / (%s).", dir.Show(), why),
			Subject:  dir.Range.Ptr(),
		})
		dir.Set = false
	}
}
