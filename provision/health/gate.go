package health

import (
	"strings"

	"github.com/gpuform/gpuform/provision/slurm"
)

// Gate is where health mode runs besides Slurm's HealthCheckProgram: in
// a job's prolog or epilog (verify --local -slurm-prolog, -slurm-epilog).
type Gate string

// Gates.
const (
	// GatePrologue judges the node before a job starts on it; a node that
	// fails is drained and the prolog's non-zero exit makes Slurm requeue
	// the job.
	GatePrologue Gate = "prolog"
	// GateEpilogue judges what a job left behind (the Xids logged since
	// it started) once it has ended.
	GateEpilogue Gate = "epilog"
)

// GateReason is the drain reason a gate sets for a Decision's Reason:
// "gpuform: health: prolog job 42: <check>: <action>: <message>", health
// mode's prefix (so the circuit breaker counts it and apply leaves it
// alone), the gate and the job it judged.
func GateReason(g Gate, job, text string) string {
	return Reason(string(g) + " job " + job + ": " + text)
}

// IsGateDrain reports whether a reason is a prolog's or epilog's drain.
func IsGateDrain(reason string) bool {
	return strings.HasPrefix(reason, ReasonPrefix+string(GatePrologue)+" job ") ||
		strings.HasPrefix(reason, ReasonPrefix+string(GateEpilogue)+" job ")
}

// Lifts reports whether a passing HealthCheckProgram run may resume n:
// health mode's own drain, and not a gate's. A gate judged what the
// periodic check may not (the quick tier's DCGM diagnostic, the Xids of
// one job); a probe-tier pass lifting it would put the node back into
// service for the next job's prolog to drain again, a requeue each
// HealthCheckInterval. A gate's drain is lifted by an operator (scontrol
// update State=RESUME) or by scontrol reboot … nextstate=RESUME.
func Lifts(n slurm.Node) bool {
	return Owns(n) && !IsGateDrain(n.Reason)
}
