package verify

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

// DefaultForbiddenThrottle is the set of throttle reasons that mean a
// hardware or cooling problem: hardware slowdown, thermal slowdown (hardware
// or software) and power-brake slowdown. Idle, application clocks, software
// power cap and sync boost are normal operation and not listed.
func DefaultForbiddenThrottle() []string {
	return []string{
		nvmlfacts.ThrottleHWSlowdown,
		nvmlfacts.ThrottleHWThermalSlowdown,
		nvmlfacts.ThrottleSWThermalSlowdown,
		nvmlfacts.ThrottleHWPowerBrakeSlowdown,
	}
}

func checkTemperature(exp Expectation, g *nvmlfacts.GPU) *CheckResult {
	if exp.MaxTemperatureC <= 0 {
		return nil
	}
	r := &CheckResult{ID: CheckTemperature.GPU(g.Index), Expected: fmt.Sprintf("<= %d C", exp.MaxTemperatureC)}
	if g.TemperatureC == nil {
		r.Status, r.Message = StatusSkip, "temperature not reported"
		return r
	}
	r.Observed = fmt.Sprintf("%d C", *g.TemperatureC)
	r.Status = StatusPass
	if *g.TemperatureC > exp.MaxTemperatureC {
		r.Status, r.Message = StatusFail, "GPU "+g.BusID+" runs hot (check airflow and fans)"
	}
	return r
}

func checkThrottle(exp Expectation, g *nvmlfacts.GPU) *CheckResult {
	forbidden := exp.ForbiddenThrottle
	if forbidden == nil {
		forbidden = DefaultForbiddenThrottle()
	}
	r := &CheckResult{ID: CheckThrottle.GPU(g.Index), Expected: "none of " + strings.Join(forbidden, ", ")}
	if g.Throttle == nil {
		r.Status, r.Message = StatusSkip, "throttle reasons not reported"
		return r
	}
	r.Observed = "none"
	if len(g.Throttle.Active) > 0 {
		r.Observed = strings.Join(g.Throttle.Active, ", ")
	}
	var bad []string
	for _, a := range g.Throttle.Active {
		if slices.Contains(forbidden, a) {
			bad = append(bad, a)
		}
	}
	r.Status = StatusPass
	if len(bad) > 0 {
		r.Status, r.Message = StatusFail, "GPU "+g.BusID+" is throttled: "+strings.Join(bad, ", ")
	}
	return r
}
