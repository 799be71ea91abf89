package plan

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/gpuform/gpuform/internal/text"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/transport"
)

// CheckSetting names where the time limit of the step checks is set: they
// run under the probe's limit.
const CheckSetting = target.ProbeSetting

// RunChecks runs the Check of every step of hp on the host behind tr (see
// resource.Step.Check), once each, in plan order. It returns what the
// checks could not tell ("unchecked: …" lines), and an error naming the
// first step that cannot succeed and why. Nothing on the host changes.
func RunChecks(ctx context.Context, tr transport.Transport, hp *HostPlan) (unchecked []string, err error) {
	seen := map[string]bool{}
	for _, rc := range hp.ResourceChanges {
		for _, st := range rc.Steps {
			if st.Check == "" || seen[st.Check] {
				continue
			}
			seen[st.Check] = true
			res, err := tr.Run(ctx, transport.Command{Script: st.Check, Become: st.Become})
			if err != nil {
				return unchecked, fmt.Errorf("%s: %s: the check before it could not run: %w", rc.Resource, st.Description, err)
			}
			if res.ExitCode != 0 {
				why := text.FirstLine(string(res.Stderr))
				if why == "" {
					why = fmt.Sprintf("its check exited %d", res.ExitCode)
				}
				return unchecked, errors.New(hp.Redact(fmt.Sprintf("%s: %s: %s", rc.Resource, st.Description, why)))
			}
			for _, l := range strings.Split(string(res.Stdout), "\n") {
				if u, ok := strings.CutPrefix(l, "unchecked: "); ok {
					unchecked = append(unchecked, hp.Redact(fmt.Sprintf("%s: not checked before apply: %s", rc.Resource, u)))
				}
			}
		}
	}
	return unchecked, nil
}

// HasChecks says whether some step of hp has a Check.
func HasChecks(hp *HostPlan) bool {
	for _, rc := range hp.ResourceChanges {
		for _, st := range rc.Steps {
			if st.Check != "" {
				return true
			}
		}
	}
	return false
}

// Preflight runs the step checks of every planned host (RunChecks), in
// parallel, each under the probe's time limit. A host whose check fails
// has no plan, like one whose hardware the spec does not fit: the plan
// names the step and why, and apply changes nothing there. What a check
// could not tell becomes a warning of the host.
func Preflight(ctx context.Context, p *Plan, o target.Options) {
	var hosts []target.Host
	byName := map[string]*HostPlan{}
	for _, hp := range p.Hosts {
		if hp.Error == "" && HasChecks(hp) {
			hosts = append(hosts, hp.Target)
			byName[hp.Host] = hp
		}
	}
	if len(hosts) == 0 {
		return
	}
	o.Progress = nil
	var mu sync.Mutex
	unchecked := map[string][]string{}
	errs := target.Each(ctx, hosts, o, func(ctx context.Context, h target.Host) error {
		ctx, cancel := transport.WithTimeout(ctx, o.ProbeLimit(h.Host), "the checks before apply", CheckSetting)
		defer cancel()
		tr, err := o.Connect(ctx, h.Host)
		if err != nil {
			return err
		}
		defer tr.Close()
		u, err := RunChecks(ctx, tr, byName[h.Host.Name])
		mu.Lock()
		unchecked[h.Host.Name] = u
		mu.Unlock()
		return err
	})
	for _, h := range hosts {
		hp := byName[h.Host.Name]
		hp.Warnings = append(hp.Warnings, unchecked[h.Host.Name]...)
		if err := errs[h.Host.Name]; err != nil {
			p.Summary.sub(hp.Summary)
			hp.Error = "preflight: " + target.ErrorText(err)
			hp.ResourceChanges = []ResourceChange{}
			hp.Images = nil
			hp.Summary = Summary{}
			hp.RebootRequired, hp.RebootPending = false, false
			p.Errored = true
		}
	}
	p.Applyable = !p.Errored && p.HasChanges()
}

func (s *Summary) sub(o Summary) {
	s.Add -= o.Add
	s.Change -= o.Change
	s.Destroy -= o.Destroy
}
