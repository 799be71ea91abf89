package spec

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// Workload describes a job that will run on a node's hosts (a
// workload "NAME" block), so lint can check that it fits: its memory per GPU
// and its parallel layout against the GPUs the hosts provide.
type Workload struct {
	// Name is the block's label.
	Name string
	// Parameters is the model's parameter count ("70B" is 7e10).
	Parameters Attr[float64]
	// Precision is "fp32", "bf16", "fp16" or "fp8" (default "bf16").
	Precision Attr[string]
	// Optimizer is "adamw", "adam", "sgd" or "none" for inference
	// (default "adamw").
	Optimizer Attr[string]
	// ZeroStage is the DeepSpeed ZeRO stage, 0 to 3 (FSDP's full shard is
	// 3; default 0).
	ZeroStage Attr[int]
	// TensorParallel, PipelineParallel and DataParallel are the parallel
	// layout (default 1 each).
	TensorParallel   Attr[int]
	PipelineParallel Attr[int]
	DataParallel     Attr[int]
	// DeclRange is the range of the block header.
	DeclRange hcl.Range
}

var workloadSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
	{Name: "parameters", Required: true}, {Name: "precision"}, {Name: "optimizer"}, {Name: "zero_stage"},
	{Name: "tensor_parallel"}, {Name: "pipeline_parallel"}, {Name: "data_parallel"},
}}

// maxParallel bounds each parallel degree: far beyond any cluster, small
// enough that their product cannot overflow.
const maxParallel = 1 << 16

func decodeWorkload(blk *hcl.Block, ctx *hcl.EvalContext) (*Workload, hcl.Diagnostics) {
	dec, _ := blockDecoder(blk, workloadSchema, ctx)
	w := &Workload{Name: blk.Labels[0], DeclRange: blk.DefRange}
	w.Parameters = dec.count("parameters")
	w.Precision = defaultString(dec.enum("precision", "fp32", "bf16", "fp16", "fp8"), "bf16")
	w.Optimizer = defaultString(dec.enum("optimizer", "adamw", "adam", "sgd", "none"), "adamw")
	w.ZeroStage = defaultInt(dec.int("zero_stage", 0, 3), 0)
	w.TensorParallel = defaultInt(dec.int("tensor_parallel", 1, maxParallel), 1)
	w.PipelineParallel = defaultInt(dec.int("pipeline_parallel", 1, maxParallel), 1)
	w.DataParallel = defaultInt(dec.int("data_parallel", 1, maxParallel), 1)
	return w, dec.diags
}

// GPUs is the number of GPUs the layout occupies: tensor × pipeline × data
// parallel.
func (w *Workload) GPUs() int {
	return w.TensorParallel.V * w.PipelineParallel.V * w.DataParallel.V
}

func defaultString(a Attr[string], def string) Attr[string] {
	if !a.Set {
		a.V = def
	}
	return a
}

func defaultInt(a Attr[int], def int) Attr[int] {
	if !a.Set {
		a.V = def
	}
	return a
}

// count decodes a count written as a number (7000000000) or a string with a
// decimal suffix ("7B", "1.5T", "350M", "125K"), as model cards write
// parameter counts.
func (d *attrDecoder) count(name string) Attr[float64] {
	v, a, ok := d.value(name, cty.DynamicPseudoType)
	if !ok {
		return Attr[float64]{Range: rangeOr(a, d.block)}
	}
	v, sens := unmarkAll(v)
	var n float64
	var err error
	switch v.Type() {
	case cty.Number:
		n, _ = v.AsBigFloat().Float64()
	case cty.String:
		n, err = ParseCount(v.AsString())
	default:
		err = fmt.Errorf("want a number or a string such as \"70B\"")
	}
	if err == nil && (n < 1 || math.IsInf(n, 0) || n > 1e15) {
		err = fmt.Errorf("%g is not a parameter count from 1 to 1000T", n)
	}
	if err != nil {
		d.diags = append(d.diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  fmt.Sprintf("Invalid value for %q", name),
			Detail:   err.Error() + ". Write the count as a number or with a suffix: \"125M\", \"7B\", \"1.5T\".",
			Subject:  a.Expr.Range().Ptr(),
		})
		return Attr[float64]{Range: a.Expr.Range(), Sensitive: sens}
	}
	return Attr[float64]{V: n, Set: true, Range: a.Expr.Range(), Sensitive: sens}
}

// ParseCount reads a count with an optional decimal suffix: K (10³), M (10⁶),
// B or G (10⁹), T (10¹²), as "7B" or "1.5T".
func ParseCount(s string) (float64, error) {
	t := strings.TrimSpace(s)
	mult := 1.0
	if t != "" {
		switch strings.ToUpper(t[len(t)-1:]) {
		case "K":
			mult = 1e3
		case "M":
			mult = 1e6
		case "B", "G":
			mult = 1e9
		case "T":
			mult = 1e12
		}
		if mult != 1 {
			t = strings.TrimSpace(t[:len(t)-1])
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is not a count", s)
	}
	return f * mult, nil
}
