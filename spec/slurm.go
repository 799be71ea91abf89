package spec

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/gpuform/gpuform/internal/lazyre"
)

// ForeignDrainPolicy is what apply does with a host that is drained or
// down in Slurm for a reason that is not gpuform's.
type ForeignDrainPolicy string

// Foreign drain policies; the rollout block's foreign_drain accepts these.
const (
	// ForeignDrainSkip leaves the host alone: an admin took it out.
	ForeignDrainSkip ForeignDrainPolicy = "skip"
	// ForeignDrainChange changes the host and leaves it drained with the
	// admin's reason: fixing a node that is out for repair.
	ForeignDrainChange ForeignDrainPolicy = "change"
)

// decodeSlurmRollout reads the rollout block's Slurm settings.
func decodeSlurmRollout(dec *attrDecoder, r *Rollout) {
	var d *hcl.Diagnostic
	if r.DrainTimeout, d = checkTimeout(dec.string("drain_timeout"), "drain_timeout", "2h"); d != nil {
		dec.diags = append(dec.diags, d)
	}
	if r.DrainPoll, d = checkTimeout(dec.string("drain_poll"), "drain_poll", "30s"); d != nil {
		dec.diags = append(dec.diags, d)
	}
	r.ForeignDrain = enumOf(dec, "foreign_drain", ForeignDrainSkip, ForeignDrainChange)
	r.SlurmNodeName = dec.string("slurm_node_name")
	if r.SlurmNodeName.Set {
		if _, err := SlurmNodeName(r.SlurmNodeName.V, "gpu001.example.com"); err != nil {
			dec.diags = append(dec.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid slurm_node_name", Detail: err.Error(), Subject: r.SlurmNodeName.Range.Ptr()})
			r.SlurmNodeName.Set = false
		}
	}
	r.SlurmClient = dec.string("slurm_client")
	if r.SlurmClient.Set {
		if err := checkHostName(r.SlurmClient.V); err != nil {
			dec.diags = append(dec.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid slurm_client", Detail: err.Error() + ".", Subject: r.SlurmClient.Range.Ptr()})
			r.SlurmClient.Set = false
		}
	}
	slurmOnly := []struct {
		name string
		set  bool
		rng  hcl.Range
	}{
		{"drain_timeout", r.DrainTimeout.Set, r.DrainTimeout.Range},
		{"drain_poll", r.DrainPoll.Set, r.DrainPoll.Range},
		{"foreign_drain", r.ForeignDrain.Set, r.ForeignDrain.Range},
		{"slurm_node_name", r.SlurmNodeName.Set, r.SlurmNodeName.Range},
		{"slurm_client", r.SlurmClient.Set, r.SlurmClient.Range},
		{`reboot = "slurm"`, r.Reboot.V == RebootSlurm, r.Reboot.Range},
	}
	for _, a := range slurmOnly {
		if a.set && r.Drain.V != DrainSlurm {
			dec.diags = append(dec.diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  a.name + " needs drain = \"slurm\"",
				Detail:   "This Slurm setting means nothing unless apply drains the hosts in Slurm; add drain = \"slurm\" to the rollout block.",
				Subject:  a.rng.Ptr(),
			})
		}
	}
}

func (r *Rollout) slurmSensitive() bool {
	return r.DrainTimeout.Sensitive || r.DrainPoll.Sensitive || r.ForeignDrain.Sensitive || r.SlurmNodeName.Sensitive || r.SlurmClient.Sensitive
}

// SlurmNodeName applies a slurm_node_name template to an inventory host
// name: {host} is the whole name, {short} its part before the first dot
// (after the last '/' of a sim:// name). The result must be a plain node
// name.
func SlurmNodeName(template, host string) (string, error) {
	short := host
	if i := strings.LastIndexByte(short, '/'); i >= 0 {
		short = short[i+1:]
	}
	short, _, _ = strings.Cut(short, ".")
	rest := strings.NewReplacer("{host}", "", "{short}", "").Replace(template)
	if strings.ContainsAny(rest, "{}") {
		return "", fmt.Errorf("%q: only {host} and {short} may appear in braces", template)
	}
	name := strings.NewReplacer("{host}", host, "{short}", short).Replace(template)
	if name == "" {
		return "", fmt.Errorf("%q gives an empty node name for %s", template, host)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.", r)) {
			return "", fmt.Errorf("%q gives %q for host %s, which has %q: Slurm node names hold letters, digits, '-', '_' and '.'", template, name, host, r)
		}
	}
	return name, nil
}

// GRESAutodetect is how slurmd finds the node's GPUs when the slurm block
// asks for GRES.
type GRESAutodetect string

// GRES detection modes; slurm { gres_autodetect } accepts these.
const (
	// GRESAutodetectNVML writes AutoDetect=nvml: slurmd reads the GPUs, their
	// CPUs and NVLinks from NVML, and verify checks what it found against
	// the numa binds.
	GRESAutodetectNVML GRESAutodetect = "nvml"
)

// Slurm configuration directories gpuform writes gres.conf in. Slurm reads
// gres.conf from the directory that holds slurm.conf: /etc/slurm for
// Slurm's own packages, RHEL's and Debian's since Slurm 20.11, and
// /etc/slurm-llnl for older Debian and Ubuntu packages.
const (
	SlurmConfDir    = "/etc/slurm"
	SlurmConfDirOld = "/etc/slurm-llnl"
)

// NodeSlurm is a node block's slurm block: what gpuform tells slurmd about
// the node's GPUs.
type NodeSlurm struct {
	// GRES writes the node's gres.conf lines (Name=gpu … File= Cores=
	// Links=) from the hardware description and the numa binds.
	GRES Attr[bool]
	// GRESAutodetect, when set, writes AutoDetect=<it> instead of the lines.
	GRESAutodetect Attr[GRESAutodetect]
	// GRESType is the Type= of the lines; by default the hardware's
	// gpu_model in lower case, with every run of characters other than
	// letters and digits turned into one "_".
	GRESType Attr[string]
	// ConfDir is the directory of slurm.conf (and so of gres.conf).
	ConfDir Attr[string]
	// DeclRange is the range of the block header.
	DeclRange hcl.Range
}

// GRESConf is the gres.conf path the block writes.
func (s *NodeSlurm) GRESConf() string {
	dir := SlurmConfDir
	if s.ConfDir.Set {
		dir = s.ConfDir.V
	}
	return dir + "/gres.conf"
}

var nodeSlurmSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
	{Name: "gres"}, {Name: "gres_autodetect"}, {Name: "gres_type"}, {Name: "conf_dir"},
}}

// gresTypePattern is a Slurm GRES type: gres.conf splits its lines at
// blanks and slurm.conf's Gres= at ':' and ','.
var gresTypePattern = lazyre.New(`^[A-Za-z0-9_.\-]{1,64}$`)

// decodeNodeSlurm reads a node block's slurm block.
func decodeNodeSlurm(blk *hcl.Block, ctx *hcl.EvalContext) (*NodeSlurm, hcl.Diagnostics) {
	dec, _ := blockDecoder(blk, nodeSlurmSchema, ctx)
	s := &NodeSlurm{DeclRange: blk.DefRange}
	s.GRES = dec.bool("gres")
	s.GRESAutodetect = enumOf(dec, "gres_autodetect", GRESAutodetectNVML)
	s.GRESType = dec.string("gres_type")
	if s.GRESType.Set && !gresTypePattern.MatchString(s.GRESType.V) {
		dec.diags = append(dec.diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid gres_type",
			Detail:   fmt.Sprintf("%s is not a Slurm GRES type: use letters, digits, '_', '-' and '.', as in slurm.conf's Gres=gpu:h100:8.", s.GRESType.Show()),
			Subject:  s.GRESType.Range.Ptr(),
		})
		s.GRESType = Attr[string]{Range: s.GRESType.Range}
	}
	s.ConfDir = dec.enum("conf_dir", SlurmConfDir, SlurmConfDirOld)
	for _, a := range []struct {
		name string
		set  bool
		rng  hcl.Range
	}{
		{"gres_autodetect", s.GRESAutodetect.Set, s.GRESAutodetect.Range},
		{"gres_type", s.GRESType.Set, s.GRESType.Range},
	} {
		if a.set && !s.GRES.V {
			dec.diags = append(dec.diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  a.name + " needs gres = true",
				Detail:   "This setting shapes the gres.conf gpuform writes, which it writes only with gres = true in the same slurm block.",
				Subject:  a.rng.Ptr(),
			})
		}
	}
	// gres.conf is world-readable and every plan shows its lines.
	if s.GRES.Sensitive || s.GRESAutodetect.Sensitive || s.GRESType.Sensitive || s.ConfDir.Sensitive {
		dec.diags = append(dec.diags, sensitiveNotAllowedDiag("A slurm setting", blk.DefRange))
	}
	if s.GRESType.Set && s.GRESAutodetect.Set {
		dec.diags = append(dec.diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "gres_type with gres_autodetect",
			Detail:   "With AutoDetect=nvml slurmd names the type from NVML (\"nvidia_h100_80gb_hbm3\"); remove gres_type.",
			Subject:  s.GRESType.Range.Ptr(),
		})
	}
	return s, dec.diags
}

// GRESTypeOf returns the Type= gpuform writes for GPUs of model: "H100 SXM5
// 80GB" is "h100_sxm5_80gb".
func GRESTypeOf(model string) string {
	var b strings.Builder
	sep := false
	for _, r := range strings.ToLower(model) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if sep && b.Len() > 0 {
				b.WriteByte('_')
			}
			sep = false
			b.WriteRune(r)
			continue
		}
		sep = true
	}
	return b.String()
}
