package verify

import (
	"strconv"

	"github.com/gpuform/gpuform/lint/compat"
)

// Remedy says what a failed check means and what to do about it, from the
// knowledge base's remediation catalogue (lint/compat/data/remediation.tsv):
// NVIDIA's Xid and SXid catalogue, DCGM's error suggestions, and gpuform's
// own judgement where no NVIDIA source gives one (Status says which).
type Remedy struct {
	// Cause names the catalogue entry: "Xid 79
	// (ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS)", a DCGM error, or the
	// check id.
	Cause string `json:"cause"`
	// Meaning is what happened, in words.
	Meaning string `json:"meaning"`
	// Action is the class of what to do: none, monitor, config, reset_gpu,
	// reboot, inspect, rma or unknown. Health mode acts by it.
	Action compat.Action `json:"action"`
	// Do is the action in words.
	Do string `json:"do"`
	// NVIDIAAction is the source's own bucket or words ("RESTART_BM").
	NVIDIAAction string `json:"nvidia_action,omitempty"`
	// Status is how well the catalogue knows it (confirmed, derived,
	// secondary, unconfirmed).
	Status string `json:"status"`
	// Source is the first public source of the row.
	Source string `json:"source,omitempty"`
}

// remedyOf makes a Remedy of a catalogue row.
func remedyOf(r compat.Remedy) *Remedy {
	return &Remedy{Cause: r.String(), Meaning: r.Describe(), Action: r.Action, Do: r.Action.Words(),
		NVIDIAAction: r.NVIDIAAction, Status: r.Status.String(), Source: r.Source()}
}

// actionRank orders actions by how much of the node they take out, so the
// worst of several Xids speaks for a check.
var actionRank = map[compat.Action]int{
	compat.ActionNone: 0, compat.ActionUnknown: 1, compat.ActionMonitor: 2, compat.ActionConfig: 3,
	compat.ActionResetGPU: 4, compat.ActionInspect: 5, compat.ActionReboot: 6, compat.ActionRMA: 7,
}

// Worse reports whether a takes out more of the node than b.
func Worse(a, b compat.Action) bool { return actionRank[a] > actionRank[b] }

// worstRemedy returns the catalogue row of kind with the worst action
// among codes; nil when none is catalogued.
func worstRemedy(kb *compat.KB, kind string, codes []uint64) *compat.Remedy {
	var worst *compat.Remedy
	for _, c := range codes {
		r, ok := kb.Remedy(kind, strconv.FormatUint(c, 10))
		if !ok {
			continue
		}
		if worst == nil || Worse(r.Action, worst.Action) {
			worst = &r
		}
	}
	return worst
}

// attachRemedies gives every failed or errored check that has none yet
// the catalogue's row for its check.
func attachRemedies(kb *compat.KB, out []CheckResult) {
	for i := range out {
		r := &out[i]
		if r.Remedy != nil || (r.Status != StatusFail && r.Status != StatusError) {
			continue
		}
		d, ok := LookupCheck(r.ID)
		if !ok {
			continue
		}
		if rem, ok := kb.Remedy("check", string(d.ID)); ok {
			r.Remedy = remedyOf(rem)
		}
	}
}

// RemedyForCheck returns the catalogue's remedy for a check id
// ("host.reachable", "nvml.pcie_link[gpu3]"); nil when it has none.
func RemedyForCheck(id string) *Remedy {
	d, ok := LookupCheck(id)
	if !ok {
		return nil
	}
	if rem, ok := compat.Default().Remedy("check", string(d.ID)); ok {
		return remedyOf(rem)
	}
	return nil
}
