package verify

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

// Remedy says what a failed check means and what to do about it, from the
// knowledge base's remediation catalogue (kb/data/remediation.tsv):
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
	Action kb.Action `json:"action"`
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
func remedyOf(r kb.Remedy) *Remedy {
	return &Remedy{Cause: r.String(), Meaning: r.Describe(), Action: r.Action, Do: r.Action.Words(),
		NVIDIAAction: r.NVIDIAAction, Status: r.Status.String(), Source: r.Source()}
}

// actionRank orders actions by how much of the node they take out, so the
// worst of several Xids speaks for a check.
var actionRank = map[kb.Action]int{
	kb.ActionNone: 0, kb.ActionUnknown: 1, kb.ActionMonitor: 2, kb.ActionConfig: 3,
	kb.ActionResetGPU: 4, kb.ActionInspect: 5, kb.ActionReboot: 6, kb.ActionRMA: 7,
}

// Worse reports whether a takes out more of the node than b.
func Worse(a, b kb.Action) bool { return actionRank[a] > actionRank[b] }

// worstRemedy returns the catalogue row of kind with the worst action
// among codes; nil when none is catalogued.
func worstRemedy(kbase *kb.KB, kind string, codes []uint64) *kb.Remedy {
	var worst *kb.Remedy
	for _, c := range codes {
		r, ok := kbase.Remedy(kind, strconv.FormatUint(c, 10))
		if !ok {
			continue
		}
		if worst == nil || Worse(r.Action, worst.Action) {
			worst = &r
		}
	}
	return worst
}

// ownStatus is the catalogue status of the remedies gpuform words itself
// (as remediation.tsv's check rows without an NVIDIA source say).
const ownStatus = "unconfirmed"

// attachRemedies gives every check that keeps its host from passing and
// has no remedy yet one that is true of what happened. A failed check gets
// the catalogue's row for its check, unless the host's facts show the row
// would say something untrue (situationalRemedy). A check gpuform could
// not judge gets a remedy that says so (couldNotTell): the row describes
// the failure, which was not seen. A not-run check the tier needed says
// the host was not checked.
func attachRemedies(kbase *kb.KB, out []CheckResult, rep *nvmlfacts.Report, extra HostFacts) {
	for i := range out {
		r := &out[i]
		if r.Remedy != nil || !r.Blocks() {
			continue
		}
		d, ok := LookupCheck(r.ID)
		if !ok {
			continue
		}
		switch {
		case r.Status == StatusNotRun:
			r.Remedy = &Remedy{Cause: string(d.ID), Meaning: "the tier needed this check and it did not run on this host: the host is not verified", Action: kb.ActionUnknown,
				Do: "make the run include this host (a multi-node test runs once per node group, over the hosts of its node block, never with --local) and verify again at the same tier", Status: ownStatus}
			continue
		case r.Status == StatusError && d.ID != CheckDCGMDiag:
			// dcgm.diag's row is about dcgmi not running, which is
			// what its errors are; every other row describes a failure.
			r.Remedy = couldNotTell(d.ID)
			continue
		}
		if rem := situationalRemedy(d.ID, *r, rep, extra); rem != nil {
			r.Remedy = rem
			continue
		}
		if rem, ok := kbase.Remedy("check", string(d.ID)); ok {
			r.Remedy = remedyOf(rem)
		}
	}
}

// couldNotTell is the remedy of a check gpuform could not judge: nothing
// is known to be wrong with the node, and nothing known to be right.
func couldNotTell(id CheckID) *Remedy {
	return &Remedy{Cause: string(id), Meaning: "gpuform could not judge this check: the node is neither known to be broken nor known to be right", Action: kb.ActionUnknown,
		Do: "the message says what could not be read or run: make it readable (or install the tool) and verify again; until then the node is unverified", Status: ownStatus}
}

// situationalRemedy replaces a catalogue row whose action the host's facts
// show to be untrue: "drain and reboot" a node with no NVIDIA GPU, or one
// with GPUs and no driver; "a GPU fell off the bus" where NVML sees more
// GPUs than the spec; "reseat the GPU" for a link a hypervisor or the
// host's slot caps; "reset the GPU" for an NVLink up on a node the spec
// says is PCIe-only. nil keeps the row.
func situationalRemedy(id CheckID, r CheckResult, rep *nvmlfacts.Report, extra HostFacts) *Remedy {
	own := func(meaning string, a kb.Action, do string) *Remedy {
		return &Remedy{Cause: string(id), Meaning: meaning, Action: a, Do: do, Status: ownStatus}
	}
	switch id {
	case CheckNVMLFacts:
		n := extra.Facts
		switch {
		case n == nil:
		case len(n.GPUs()) == 0:
			return own("no NVIDIA GPU on the PCI bus (the facts probe lists no device of vendor 0x10de, class 0x0300/0x0302)", kb.ActionConfig,
				"no NVIDIA GPU found: is this a GPU node? check the driver is installed")
		case n.Driver == nil:
			return own(fmt.Sprintf("%d NVIDIA GPU(s) on the PCI bus, but no NVIDIA driver is loaded (/proc/driver/nvidia/version is absent)", len(n.GPUs())), kb.ActionConfig,
				"install the driver (gpuform apply installs the spec's, then reboots if it must) or load it (modprobe nvidia); dmesg says why a driver failed to load")
		}
	case CheckGPUCount:
		if obs, err1 := strconv.Atoi(r.Observed); err1 == nil {
			if want, err2 := strconv.Atoi(r.Expected); err2 == nil && obs > want {
				return own("NVML enumerates more GPUs than the spec says the node has", kb.ActionConfig,
					"fix the spec's GPU count (the hardware block) or the host's placement in the spec")
			}
		}
	case CheckReachable:
		return ReachableRemedy()
	case CheckPCIeLink:
		var g *nvmlfacts.GPU
		if rep != nil && r.GPU != nil {
			g = rep.GPUByIndex(r.GPU.Index)
		}
		switch {
		case g == nil || g.PCIe == nil:
		case g.InVM():
			return own("the PCIe link is the one the hypervisor presents to this virtual machine ("+g.Virtualization+")", kb.ActionConfig,
				"set min_pcie_gen / min_pcie_width to what the instance type provides, or report the link to the cloud provider or hypervisor admin; there is no GPU to reseat")
		case g.PCIe.GPUMaxGen > g.PCIe.MaxGen && g.PCIe.CurrentWidth >= g.PCIe.MaxWidth && g.PCIe.CurrentGen >= g.PCIe.MaxGen:
			// The link runs at the host's maximum, below the GPU's.
			return own("the PCIe link runs at the slot's or host's maximum, below the GPU's", kb.ActionConfig,
				"check the BIOS slot setting and the riser; if the platform itself is of that generation, set min_pcie_gen to it")
		}
	case CheckNCCL:
		if res, ok := extra.NCCL[strings.TrimPrefix(r.ID, string(CheckNCCL)+".")]; ok && res.NotInstalled {
			return own("the nccl-tests binary (or the launcher) the test runs is not installed on the node", kb.ActionConfig,
				"install nccl-tests where the command looks for it (and mpirun or srun for a multi-node test), or add \"nccl_tests\" to verify { optional } where a node may lack them")
		}
	case CheckNVLink:
		if r.Expected == "no active links" {
			return own("an NVLink is active on a node the spec says is PCIe-only", kb.ActionConfig,
				"fix the spec's hardware (its interconnect), or the host's placement in the spec")
		}
	}
	return nil
}

// ReachableRemedy is what to do about a host gpuform could not reach: the
// message holds the SSH error.
func ReachableRemedy() *Remedy {
	return &Remedy{Cause: string(CheckReachable), Meaning: "the host could not be reached over SSH (the message is the SSH error)", Action: kb.ActionUnknown,
		Do: "check the host is up and reachable: its address, port and SSH access (keys, user, known_hosts), and that sshd runs", Status: ownStatus}
}

// RemedyForCheck returns the catalogue's remedy for a check id
// ("host.reachable", "nvml.pcie_link[gpu3]"); nil when it has none.
func RemedyForCheck(k *kb.KB, id string) *Remedy {
	d, ok := LookupCheck(id)
	if !ok {
		return nil
	}
	if d.ID == CheckReachable {
		// The row has no action; the SSH error and where to look do.
		return ReachableRemedy()
	}
	if rem, ok := k.Remedy("check", string(d.ID)); ok {
		return remedyOf(rem)
	}
	return nil
}
