package verify

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gpuform/gpuform/provision/plan"
	"github.com/gpuform/gpuform/provision/resource"
)

// checkSpec judges the resources the spec manages (packages, files,
// services, sysctls, kernel arguments...) with plan's own comparison
// (plan.Diff over the facts the probe already gathered), so that verify
// passes exactly when `plan` has nothing to do: one spec.<resource> check
// per resource, spec.reboot_pending for configuration that waits for a
// boot, and spec.compare, which errs when the comparison cannot be made.
// pending names the resources that wait for a reboot, the driver package
// with the release installed.
func checkSpec(exp Expectation, extra HostFacts) (out []CheckResult, pending map[string]string) {
	if exp.Spec == nil {
		return nil, nil
	}
	if extra.Facts == nil {
		return []CheckResult{{ID: string(CheckSpecCompare), Status: StatusError, Expected: "the spec's resources compared with the host",
			Message: "no probe facts: the spec's resources could not be compared"}}, nil
	}
	changes, _, err := plan.Diff(exp.KB, exp.Spec, extra.Facts)
	cmp := CheckResult{ID: string(CheckSpecCompare), Status: StatusPass, Expected: "the spec's resources compared with the host",
		Observed: fmt.Sprintf("%d resource(s) compared", len(changes))}
	if err != nil {
		cmp.Status, cmp.Message = StatusError, err.Error()
	}
	out = []CheckResult{cmp}
	if len(changes) == 0 {
		return out, nil
	}
	reboot, pending := rebootPending(changes, extra)
	out = append(out, reboot)
	for _, rc := range changes {
		r := resourceCheck(rc)
		if rc.Resource == resource.ContainerImages {
			if why := imagesNotAsked(exp, extra); why != "" {
				r = CheckResult{ID: r.ID, Status: StatusNotRun, Needed: true, Expected: r.Expected, Observed: "not asked",
					Message: "not run: the node's images could not be asked from here: " + why}
			}
		}
		out = append(out, r)
	}
	return out, pending
}

// imagesNotAsked is why the store of the spec's container runtime was
// not asked (facts.ImageStore.NotRun: under a host root, no client of
// the runtime in the pod), "" when it was: plan's comparison would read
// such a store as holding no image, and the check is not run instead.
func imagesNotAsked(exp Expectation, extra HostFacts) string {
	if s := resource.NodeImages(exp.Spec, extra.Facts); s != nil {
		return s.NotRun
	}
	return ""
}

// resourceCheck turns one resource's planned change into its check: no-op
// passes; anything apply would do fails, naming each attribute that
// differs with what the host has and what the spec wants.
//
// Observed and Expected write sizes in the spec's form ("stack=64MiB", as
// the plan shows them); where that differs from what the host's file says
// ("stack=65536"), ObservedRaw and ExpectedRaw keep the file's text for
// JSON readers.
func resourceCheck(rc plan.ResourceChange) CheckResult {
	r := judgeResource(rc, true)
	raw := judgeResource(rc, false)
	if raw.Observed != r.Observed {
		r.ObservedRaw = raw.Observed
	}
	if raw.Expected != r.Expected {
		r.ExpectedRaw = raw.Expected
	}
	return r
}

// judgeResource is resourceCheck with the attributes' values as the
// human output shows them (shown) or as the resource wrote them.
func judgeResource(rc plan.ResourceChange, shown bool) CheckResult {
	formatAttrs := func(m plan.Attrs, keys []string) string { return formatAttrs(rc.Resource, m, keys, shown) }
	r := CheckResult{ID: CheckSpecResource.Named(rc.Resource)}
	switch rc.Action {
	case resource.NoOp:
		r.Status = StatusPass
		r.Observed = formatAttrs(rc.Before, nil)
		r.Expected = formatAttrs(rc.After, nil)
		if rc.RebootPending {
			r.Message = "in place; takes effect at the next boot (spec.reboot_pending)"
		}
		return r
	case resource.Create:
		r.Status = StatusFail
		r.Observed, r.Expected = "absent", formatAttrs(rc.After, nil)
		r.Message = rc.Resource + " is not on the host"
	case resource.Delete:
		r.Status = StatusFail
		r.Observed, r.Expected = formatAttrs(rc.Before, nil), "absent"
		r.Message = "gpuform manages " + rc.Resource + " on the host, but the spec no longer declares it"
	default:
		keys := changedKeys(rc)
		if len(keys) == 1 && keys[0] == plan.ManagedBy {
			// The host is as the spec says; only the record of which spec
			// manages it is missing or names no spec (a node converged by
			// hand or by an older gpuform). That is bookkeeping apply
			// writes, not drift.
			r.Status = StatusPass
			r.Observed, r.Expected = formatAttrs(rc.Before, nil), formatAttrs(rc.After, nil)
			r.Message = "as the spec says; not yet recorded as managed by this spec (`gpuform apply` records it)"
			return r
		}
		r.Status = StatusFail
		r.Observed, r.Expected = formatAttrs(rc.Before, keys), formatAttrs(rc.After, keys)
		r.Message = rc.Resource + " drifted from the spec: " + strings.Join(keys, ", ") + " differ"
		if len(keys) == 1 {
			r.Message = rc.Resource + " drifted from the spec: " + keys[0] + " differs"
		}
	}
	r.Message += "; `gpuform apply` " + map[resource.Action]string{resource.Create: "creates", resource.Update: "updates", resource.Delete: "removes"}[rc.Action] + " it"
	if len(rc.Restarts) > 0 {
		r.Message += " (restarts " + strings.Join(rc.Restarts, ", ") + ")"
	}
	if rc.RebootRequired {
		r.Message += " and needs a reboot"
	}
	return r
}

// changedKeys lists the attributes that differ, sorted.
func changedKeys(rc plan.ResourceChange) []string {
	seen := map[string]bool{}
	var keys []string
	for _, m := range []plan.Attrs{rc.Before, rc.After} {
		for k := range m {
			if !seen[k] && rc.Changed(k) {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	sort.Strings(keys)
	return keys
}

// formatAttrs writes attributes of resource res as "key=value, ..." in
// key order: only keys when given (an absent one reads "(none)"), else all
// of them; with shown, each value as human output writes it
// (plan.DisplayValue: sizes in the spec's form).
func formatAttrs(res string, m plan.Attrs, keys []string, shown bool) string {
	if keys == nil {
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
	}
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		v, ok := m[k]
		if shown {
			v = plan.DisplayValue(res, k, v)
		}
		switch {
		case !ok:
			parts = append(parts, k+"=(none)")
		case v.Text == "":
			parts = append(parts, k+`=""`)
		default:
			parts = append(parts, k+"="+v.Text)
		}
	}
	return strings.Join(parts, ", ")
}

// rebootPending fails when configuration the spec manages is in place but
// the running system still differs until the next boot: above all a
// driver installed while another one is loaded, which it names. It
// returns the waiting resources, each with what is installed ("" but for
// the driver).
func rebootPending(changes []plan.ResourceChange, extra HostFacts) (r CheckResult, waiting map[string]string) {
	r = CheckResult{ID: string(CheckRebootPending), Expected: "what is installed is what runs"}
	var names, parts []string
	for _, rc := range changes {
		if !rc.RebootPending {
			continue
		}
		if waiting == nil {
			waiting = map[string]string{}
		}
		names = append(names, rc.Resource)
		waiting[rc.Resource] = ""
		if rc.Resource == resource.DriverPackage {
			loaded := "no driver"
			if d := extra.Facts.Driver; d != nil && d.Version != "" {
				loaded = d.Version
			}
			waiting[rc.Resource] = rc.After["version"].Text
			parts = append(parts, fmt.Sprintf("driver %s installed, %s loaded", rc.After["version"].Text, loaded))
		}
	}
	if len(names) == 0 {
		r.Status, r.Observed = StatusPass, "nothing waits for a reboot"
		return r, nil
	}
	parts = append(parts, "waiting: "+strings.Join(names, ", "))
	r.Status = StatusFail
	r.Observed = strings.Join(parts, "; ")
	r.Message = "a reboot is pending: what is installed for " + strings.Join(names, ", ") + " runs only after the next boot; reboot the host (or apply with rollout { reboot = \"allow\" })"
	return r, waiting
}

// explainPending says, on a live check that fails because what it checks
// waits for a reboot, that it does: the loaded driver, fabric manager and
// peermem follow the driver installed once the host boots.
func explainPending(out []CheckResult, pending map[string]string) {
	for i := range out {
		r := &out[i]
		if r.Status != StatusFail {
			continue
		}
		switch r.ID {
		case string(CheckDriverVersion):
			if v, ok := pending[resource.DriverPackage]; ok {
				r.Message = v + " is installed and loads at the next boot (spec.reboot_pending)"
			}
		case string(CheckFabricManager):
			if _, ok := pending[resource.FabricManager]; ok {
				r.Message += "; it starts at the next boot (spec.reboot_pending)"
			}
		case string(CheckPeermem):
			if _, ok := pending[resource.NvidiaPeermem]; ok {
				r.Message += "; it loads at the next boot (spec.reboot_pending)"
			}
		}
	}
}
