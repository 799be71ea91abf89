package verify

import (
	"time"

	"github.com/gpuform/gpuform/provision/verify/burnin"
	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
	"github.com/gpuform/gpuform/spec"
)

// BurninMaxAge is how long a node's passed burn-in qualifies it: the
// spec's verify { burnin { max_age } }, else burnin.DefaultMaxAge.
func BurninMaxAge(n *spec.Node) time.Duration {
	if n != nil && n.Verify != nil && n.Verify.Burnin != nil && n.Verify.Burnin.MaxAge.Set {
		return n.Verify.Burnin.MaxAge.V.D
	}
	return burnin.DefaultMaxAge
}

// BurninDuration is the burn-in tier's sustained load: verify { burnin {
// duration } }, else burnin.DefaultDuration.
func BurninDuration(n *spec.Node) time.Duration {
	if n != nil && n.Verify != nil && n.Verify.Burnin != nil && n.Verify.Burnin.Duration.Set {
		return n.Verify.Burnin.Duration.V.D
	}
	return burnin.DefaultDuration
}

// BurninRecordCheck judges the node's burn-in record (verify
// -require-burnin): data and found as burnin.ReadRecord returned them,
// readErr its error, rep the NVML report the record must match, and
// minDuration the spec's burn-in duration: a record of a shorter load
// (a burn-in run under an older or another spec) did not run what the
// spec asks and fails as too-short. It never passes what it could not
// judge: an unreadable record or no NVML report is an error.
func BurninRecordCheck(data []byte, found bool, readErr error, rep *nvmlfacts.Report, now time.Time, maxAge, minDuration time.Duration) CheckResult {
	r := CheckResult{ID: string(CheckBurninRecord), Expected: "a passed burn-in of these GPUs and driver, finished within " + maxAge.String() + ", of at least " + minDuration.String() + " of load"}
	switch {
	case readErr != nil:
		r.Status, r.Observed, r.Message = StatusError, "unreadable", readErr.Error()
		return r
	case rep == nil || rep.DriverVersion == "" || len(rep.GPUs) == 0:
		r.Status, r.Observed, r.Message = StatusError, "no NVML facts", "the burn-in record cannot be matched to the node's GPUs and driver without NVML facts"
		return r
	}
	v := burnin.Judge(data, found, now, maxAge, burnin.IdentityOf(rep))
	r.Observed, r.Message, r.Status = string(v.Reason), v.Message, StatusFail
	switch {
	case v.OK && v.Duration < minDuration:
		r.Observed = "too-short"
		r.Message = "the burn-in recorded " + v.Duration.String() + " of load, the spec's verify { burnin { duration } } is " + minDuration.String() + ": run verify -tier burnin again"
	case v.OK:
		r.Status = StatusPass
	}
	return r
}

// BurninChecks turns a burn-in's findings into checks: burnin.NAME, or
// burnin.NAME[SUBJECT] for a GPU's (by bus id) or an NCCL run's. A part
// of the burn-in that did not run is not run and needed: the tier ran
// it, so the host is not burnt in.
func BurninChecks(fs []burnin.Finding) []CheckResult {
	out := make([]CheckResult, 0, len(fs))
	for _, f := range fs {
		r := CheckResult{ID: f.Check, Observed: f.Message, Expected: burninExpected[f.Check]}
		if f.Subject != "" {
			r.ID += "[" + f.Subject + "]"
		}
		switch f.Status {
		case burnin.StatusPass:
			r.Status = StatusPass
		case burnin.StatusNotRun:
			r.Status, r.Needed = StatusNotRun, true
		default:
			r.Status = StatusFail
		}
		out = append(out, r)
	}
	return out
}

var burninExpected = map[string]string{
	"burnin.dcgm":         "dcgmi diag -r 3/4 passes its hardware and stress tests",
	"burnin.load":         "the sustained load runs for the burn-in's duration",
	"burnin.thermal":      "no thermal, hardware or power-brake slowdown under load",
	"burnin.clocks":       "SM clock under load within the margin of its peers",
	"burnin.fleet_clocks": "SM clock under load within the margin of its model's GPUs on every host burnt in together",
	"burnin.nccl":         "#wrong 0 and busbw steady across iterations",
	"burnin.counters":     "no PCIe AER, ECC or NVLink error counter rises during the load",
}

// BurninWriteCheck is burnin.write: the burn-in's record written on the
// node (err nil, why empty), or why it was not (an error, never a pass:
// -require-burnin would refuse the node).
func BurninWriteCheck(err error, why string) CheckResult {
	r := CheckResult{ID: "burnin.write", Expected: "the burn-in's record written to " + burnin.Path}
	switch {
	case err != nil && why == "":
		r.Status, r.Observed, r.Message = StatusError, "not written", err.Error()
	case why != "":
		r.Status, r.Observed, r.Message = StatusError, "not written", why
	default:
		r.Status, r.Observed = StatusPass, "written"
	}
	return r
}
