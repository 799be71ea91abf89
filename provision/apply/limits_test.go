package apply

import (
	"testing"
	"time"

	"github.com/gpuform/gpuform/provision/plan"
	"github.com/gpuform/gpuform/spec"
)

// The rollout's timeouts reach apply parsed (spec decoding or the plan
// file's reader did it): Options first, then the rollout, then the
// defaults.
func TestRolloutLimits(t *testing.T) {
	nr := plan.NodeRollout{StepTimeout: spec.Duration{Text: "45m", D: 45 * time.Minute},
		DrainTimeout: spec.Duration{Text: "3h", D: 3 * time.Hour}, DrainPoll: spec.Duration{Text: "5s", D: 5 * time.Second}}
	for name, tc := range map[string]struct {
		nr                  plan.NodeRollout
		opts                Options
		step, timeout, poll time.Duration
	}{
		"rollout":  {nr: nr, step: 45 * time.Minute, timeout: 3 * time.Hour, poll: 5 * time.Second},
		"defaults": {step: DefaultStepTimeout, timeout: defaultDrainTimeout, poll: defaultDrainPoll},
		"options":  {nr: nr, opts: Options{StepTimeout: time.Minute, DrainTimeout: 2 * time.Minute, DrainPoll: time.Second}, step: time.Minute, timeout: 2 * time.Minute, poll: time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			timeout, poll := drainLimits(tc.nr, tc.opts)
			if step := tc.opts.stepTimeout(tc.nr); step != tc.step || timeout != tc.timeout || poll != tc.poll {
				t.Errorf("step %s drain %s poll %s, want %s %s %s", step, timeout, poll, tc.step, tc.timeout, tc.poll)
			}
		})
	}
}
