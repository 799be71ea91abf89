package kb

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Action is what an operator does about an error or a failed check:
// gpuform's class of NVIDIA's resolution buckets (the Xid catalogue's
// "immediate action", DCGM's suggestions). Health mode acts by it.
type Action string

// The actions, from the mildest. remediation.tsv's action column holds
// these words.
const (
	// ActionNone is informational: NVIDIA says to ignore it.
	ActionNone Action = "none"
	// ActionMonitor may be the job's own fault (NVIDIA: restart the
	// application): watch for repeats before taking the node out.
	ActionMonitor Action = "monitor"
	// ActionConfig is fixed by configuration or software (fabric manager,
	// driver, the spec), not by hardware work.
	ActionConfig Action = "config"
	// ActionResetGPU needs the GPU drained and reset (or the node
	// rebooted).
	ActionResetGPU Action = "reset_gpu"
	// ActionReboot needs the node drained and rebooted.
	ActionReboot Action = "reboot"
	// ActionInspect needs the node drained and its cooling, power or
	// cabling checked.
	ActionInspect Action = "inspect"
	// ActionRMA needs the node drained and the part diagnosed by NVIDIA
	// (field diagnostic, support case, replacement).
	ActionRMA Action = "rma"
	// ActionUnknown: the source gives no action.
	ActionUnknown Action = "unknown"
)

// parseAction reads an action cell.
func parseAction(s string) (Action, bool) {
	switch a := Action(s); a {
	case ActionNone, ActionMonitor, ActionConfig, ActionResetGPU, ActionReboot, ActionInspect, ActionRMA, ActionUnknown:
		return a, true
	}
	return "", false
}

// Words says what to do, for a report line or a drain reason.
func (a Action) Words() string {
	switch a {
	case ActionNone:
		return "no action (informational)"
	case ActionMonitor:
		return "monitor: restart the job; repeats point to the GPU"
	case ActionConfig:
		return "fix the configuration or software"
	case ActionResetGPU:
		return "drain, then reset the GPU or reboot the node"
	case ActionReboot:
		return "drain and reboot the node"
	case ActionInspect:
		return "drain and inspect the hardware: seating, cabling, cooling, power"
	case ActionRMA:
		return "drain for RMA: run NVIDIA's field diagnostic, open a support case"
	}
	// ActionUnknown: saying only that the source gives none leaves the
	// operator with nothing to do; say what is left to do.
	return "no action catalogued: read the message, and the source's documentation for this error, before acting"
}

// Remedy is one row of remediation.tsv: what an Xid, SXid, DCGM error
// code or gpuform check means and what to do about it.
type Remedy struct {
	// Kind is "xid", "sxid", "dcgm" or "check".
	Kind string
	// Code is the number (Xid, SXid, DCGM_FR_*) or the check id.
	Code string
	// Name is NVIDIA's mnemonic; "" for checks.
	Name string
	// Meaning says what happened; "" when the source gives only the
	// mnemonic.
	Meaning string
	// Action is gpuform's class of NVIDIA's action.
	Action Action
	// NVIDIAAction is the source's own words or bucket.
	NVIDIAAction string
	Fact
}

// Describe is the meaning, or the mnemonic when the source gives no
// description.
func (r Remedy) Describe() string {
	if r.Meaning != "" {
		return r.Meaning
	}
	return r.Name
}

// remedyKinds are the kinds remediation.tsv may hold.
var remedyKinds = map[string]bool{"xid": true, "sxid": true, "dcgm": true, "check": true}

func (kb *KB) loadRemedies() error {
	t, err := readTable(kb.fsys, "data/remediation.tsv", "kind", "code", "name", "meaning", "action", "nvidia_action", "status", "sources", "note")
	if err != nil {
		return err
	}
	kb.remedies = map[string]Remedy{}
	for _, r := range t.rows {
		st, err := r.status("status")
		if err != nil {
			return err
		}
		kind, code := r.get("kind"), r.get("code")
		if !remedyKinds[kind] {
			return r.errorf("kind %q: want xid, sxid, dcgm or check", kind)
		}
		if kind != "check" {
			if _, err := strconv.ParseUint(code, 10, 32); err != nil {
				return r.errorf("code %q: want a number for a %s", code, kind)
			}
		}
		act, ok := parseAction(r.get("action"))
		if !ok {
			return r.errorf("action %q: want none, monitor, config, reset_gpu, reboot, inspect, rma or unknown", r.get("action"))
		}
		rem := Remedy{Kind: kind, Code: code, Name: dash(r.get("name")), Meaning: dash(r.get("meaning")), Action: act,
			NVIDIAAction: r.get("nvidia_action"), Fact: r.fact(st, "sources", "note")}
		if rem.Note == "-" {
			rem.Note = ""
		}
		key := kind + "/" + code
		if _, dup := kb.remedies[key]; dup {
			return r.errorf("%s %s defined twice", kind, code)
		}
		kb.remedies[key] = rem
		kb.remedyOrder = append(kb.remedyOrder, key)
	}
	return nil
}

// dash turns the table's "-" (no value) into "".
func dash(s string) string {
	if s == "-" {
		return ""
	}
	return s
}

// Remedy returns the row for kind ("xid", "sxid", "dcgm", "check") and
// code (a number, or a check id such as "nvml.gpu_count").
func (kb *KB) Remedy(kind, code string) (Remedy, bool) {
	r, ok := kb.remedies[kind+"/"+code]
	return r, ok
}

// XidRemedy returns the row of Xid n.
func (kb *KB) XidRemedy(n uint64) (Remedy, bool) { return kb.Remedy("xid", strconv.FormatUint(n, 10)) }

// Remedies returns every row in table order.
func (kb *KB) Remedies() []Remedy {
	out := make([]Remedy, 0, len(kb.remedyOrder))
	for _, k := range kb.remedyOrder {
		out = append(out, kb.remedies[k])
	}
	return out
}

// String is "Xid 79 (ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS)" or the
// check id.
func (r Remedy) String() string {
	switch r.Kind {
	case "check":
		return r.Code
	case "xid":
		return fmt.Sprintf("Xid %s (%s)", r.Code, r.Name)
	case "sxid":
		return fmt.Sprintf("SXid %s (%s)", r.Code, r.Name)
	}
	return fmt.Sprintf("%s (DCGM error %s)", r.Name, r.Code)
}

// xidSubcode is one row of xid-subcodes.tsv: the catalogue's "XID 144-150
// Decode" sheet, whose action depends on the subcode the Xid line names and
// on its error status (the second register in the line's parentheses).
type xidSubcode struct {
	xid      uint64
	names    []string // V1 and V2 spellings ("TLW_RX", "TLW_RX_PIPE0")
	statuses []string // "0x00000001"; nil: any (the sheet decodes IntrInfo bits instead)
	action   Action
	action2  Action // the action when the error is promoted to fatal; "" for none
	nvidia   string
	fact     Fact
}

func (kb *KB) loadSubcodes() error {
	t, err := readTable(kb.fsys, "data/xid-subcodes.tsv", "xid", "subcode", "error_status", "action", "action_2", "nvidia_action", "status", "sources")
	if err != nil {
		return err
	}
	for _, r := range t.rows {
		st, err := r.status("status")
		if err != nil {
			return err
		}
		x, err := strconv.ParseUint(r.get("xid"), 10, 32)
		if err != nil || x < 144 || x > 150 {
			return r.errorf("xid %q: want 144 to 150", r.get("xid"))
		}
		act, ok := parseAction(r.get("action"))
		if !ok {
			return r.errorf("action %q is not an action class", r.get("action"))
		}
		var act2 Action
		if a := r.get("action_2"); a != "-" {
			if act2, ok = parseAction(a); !ok {
				return r.errorf("action_2 %q is not an action class", a)
			}
		}
		sc := xidSubcode{xid: x, names: strings.Split(r.get("subcode"), "/"), action: act, action2: act2,
			nvidia: r.get("nvidia_action"), fact: r.fact(st, "sources", "")}
		if s := r.get("error_status"); s != "-" {
			for _, v := range strings.Split(s, "/") {
				sc.statuses = append(sc.statuses, strings.ToLower(v))
			}
		}
		kb.subcodes = append(kb.subcodes, sc)
	}
	return nil
}

// actionOrder ranks actions by how much of the node they take out (the
// same order as verify.Worse), to pick the worst of several subcode rows.
var actionOrder = map[Action]int{ActionNone: 0, ActionUnknown: 1, ActionMonitor: 2, ActionConfig: 3,
	ActionResetGPU: 4, ActionInspect: 5, ActionReboot: 6, ActionRMA: 7}

// XidSubcodeRemedy answers for an NVLink5 Xid (144-150) by the subcode
// and error status its kernel line names ("NVRM: Xid (PCI:…): 145,
// RLW_REMAP Nonfatal XC0 i0 Link 02 (0x… 0x00000001 …)"). fatal is the
// line's own severity word: a "Fatal" line takes a promotable row's second
// action. Where the sheet gives several rows for the subcode and status
// (it decodes IntrInfo bits gpuform does not), the worst action answers.
// ok=false when the sheet has no row for them: the caller falls back to
// the Xid's own row.
func (kb *KB) XidSubcodeRemedy(xid uint64, subcode, errorStatus string, fatal bool) (Remedy, bool) {
	base, ok := kb.XidRemedy(xid)
	if !ok || subcode == "" {
		return Remedy{}, false
	}
	errorStatus = strings.ToLower(errorStatus)
	var best *xidSubcode
	bestAction := Action("")
	for i := range kb.subcodes {
		sc := &kb.subcodes[i]
		if sc.xid != xid || !slices.Contains(sc.names, subcode) {
			continue
		}
		if sc.statuses != nil && !slices.Contains(sc.statuses, errorStatus) {
			continue
		}
		act := sc.action
		if fatal && sc.action2 != "" {
			act = sc.action2
		}
		if best == nil || actionOrder[act] > actionOrder[bestAction] {
			best, bestAction = sc, act
		}
	}
	if best == nil {
		return Remedy{}, false
	}
	r := base
	r.Name = base.Name + " " + subcode
	if errorStatus != "" {
		r.Name += " " + errorStatus
	}
	r.Action, r.NVIDIAAction, r.Fact = bestAction, best.nvidia, best.fact
	return r, true
}
