package spec

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
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
	r.DrainTimeout = dec.string("drain_timeout")
	if d := checkTimeout(r.DrainTimeout, "drain_timeout", "2h"); d != nil {
		dec.diags = append(dec.diags, d)
		r.DrainTimeout.Set = false
	}
	r.DrainPoll = dec.string("drain_poll")
	if d := checkTimeout(r.DrainPoll, "drain_poll", "30s"); d != nil {
		dec.diags = append(dec.diags, d)
		r.DrainPoll.Set = false
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
