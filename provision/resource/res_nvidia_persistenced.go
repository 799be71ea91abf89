package resource

import (
	"github.com/gpuform/gpuform/provision/facts"
)

// nvidiaPersistencedReads declares what nvidia_persistenced reads back on a
// node: the daemon's unit.
func nvidiaPersistencedReads() facts.Reads {
	return facts.Reads{Units: []string{"nvidia-persistenced.service"}}
}

// buildNvidiaPersistenced keeps nvidia-persistenced enabled and running
// when the driver block asks for persistence mode.
func buildNvidiaPersistenced(in *buildInput) ([]Resource, []string, error) {
	if !in.driverWanted() || !in.n.Driver.PersistenceMode.V {
		return nil, nil, nil
	}
	return []Resource{&serviceResource{base: base{name: NvidiaPersistenced, deps: []string{DriverPackage}}, unit: "nvidia-persistenced.service", afterReboot: in.afterReboot}}, nil, nil
}

// serviceResource keeps a systemd unit enabled and running.
type serviceResource struct {
	base
	unit string
	// afterReboot, when it reports true, means the unit can only start at
	// the next boot: it is enabled now and left stopped.
	afterReboot func(*facts.Node) bool
}

func (r *serviceResource) Diff(n *facts.Node) (Change, error) {
	st := n.Unit(r.unit)
	before := Values{"enabled": StringVal(st.Enabled), "active": StringVal(st.Active)}
	if st.Enabled == "not-found" {
		before = nil
	}
	after := Values{"enabled": StringVal("enabled"), "active": StringVal("active")}
	c := r.change(before, after)
	if c.Action == NoOp {
		return c, nil
	}
	deferred := r.afterReboot != nil && r.afterReboot(n)
	if deferred && st.Enabled == "enabled" {
		c.Action = NoOp
		c.After = c.Before
		c.RebootPending = true
		return c, nil
	}
	if before != nil {
		c.Action = Update
	}
	c.RebootRequired = deferred
	s, err := unitStep(r.unit, !deferred)
	if err != nil {
		return Change{}, err
	}
	c.Steps = []Step{s}
	return c, nil
}
