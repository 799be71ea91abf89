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
// readErr its error, rep the NVML report the record must match. It never
// passes what it could not judge: an unreadable record or no NVML report
// is an error.
func BurninRecordCheck(data []byte, found bool, readErr error, rep *nvmlfacts.Report, now time.Time, maxAge time.Duration) CheckResult {
	r := CheckResult{ID: string(CheckBurninRecord), Expected: "a passed burn-in of these GPUs and driver, finished within " + maxAge.String()}
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
	if v.OK {
		r.Status = StatusPass
	}
	return r
}
