package resource

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gpuform/gpuform/provision/facts"
)

// Resource is one node concern that gpuform converges.
type Resource interface {
	// Name is the resource's address in a plan ("driver_package", "sysctl").
	Name() string
	// DependsOn names the resources whose steps must run first.
	DependsOn() []string
	// Diff compares the desired value with what n says and returns the
	// change that converges it, steps included. An error means the resource
	// cannot be planned on this node (unknown distribution, a daemon.json
	// that is not JSON); the plan reports it for the host.
	Diff(n *facts.Node) (Change, error)
}

// Change is a planned change of one resource on one host.
type Change struct {
	// Resource is the resource's Name.
	Resource string `json:"resource"`
	// Action is what the change does; NoOp when converged.
	Action Action `json:"-"`
	// Path is the file a config resource writes ("/etc/nccl.conf"), so the
	// plan says where its attributes go; "" for a resource that is not a
	// file (a package, a service).
	Path string `json:"path,omitempty"`
	// Before is the actual value, attribute by attribute; nil when the
	// resource is absent.
	Before Values `json:"before"`
	// After is the desired value; nil when the resource will be deleted.
	After Values `json:"after"`
	// RebootRequired is true when the change takes full effect only after a
	// reboot (driver, kernel command line, boot-time huge pages).
	RebootRequired bool `json:"reboot_required"`
	// RebootPending is true when the configuration is in place but the
	// running system still differs until the next boot (a new driver
	// installed while the old one is loaded).
	RebootPending bool `json:"reboot_pending,omitempty"`
	// PendingReason says, when RebootPending, what waits for the reboot
	// ("580.95.05 installed, 550.90.07 loaded"); "" when the resource
	// cannot tell more than that it waits.
	PendingReason string `json:"pending_reason,omitempty"`
	// Restarts are the services the change restarts.
	Restarts []string `json:"restarts,omitempty"`
	// Downgrades are the packages the change moves to an older release,
	// "name 580.95.05 -> 580.65.06".
	Downgrades []string `json:"downgrades,omitempty"`
	// DependsOn are the resources that converge first.
	DependsOn []string `json:"depends_on,omitempty"`
	// VersionFrom is the floating version the spec wrote ("580") when
	// After's version is the release of it resolved from the host's
	// repositories ("580.95.05"); "" otherwise.
	VersionFrom string `json:"version_from,omitempty"`
	// Releases are the exact versions the change gives the package
	// manager, by package ("cuda-drivers-580": "580.95.05-1"), when they
	// were resolved against the host's repositories at plan time. A saved
	// plan records them, and apply installs exactly these.
	Releases map[string]string `json:"releases,omitempty"`
	// Unresolved says why a floating version could not be resolved to a
	// release at plan time (the host's package lists are empty).
	Unresolved string `json:"version_unresolved,omitempty"`
	// Missing are the packages the change installs at a release no
	// repository of the host offers; plan refuses the host (preflight).
	Missing []Missing `json:"-"`
	// Steps converge the resource, in order. Empty for NoOp.
	Steps []Step `json:"-"`
	// Keys, for a resource made of keys that several specs may share
	// (sysctl, limits, kernel_cmdline, nccl_conf, docker_daemon), says which keys the spec declares and which
	// the file holds now, so that ownership is recorded per key; nil for
	// every other resource, and when the node has no owner.
	Keys *KeyedFile `json:"-"`
}

// KeyedFile is what a keyed resource's change says about its keys.
type KeyedFile struct {
	// Declared are the keys the spec sets, sorted.
	Declared []string
	// InFile are the keys the file holds before the change that a spec
	// may own, sorted: every key of gpuform's own drop-ins; in a file
	// shared with the operator (nccl.conf), only the keys gpuform writes.
	InFile []string
	// WholeFileRecord says what a record of the whole resource, written
	// by a gpuform before key records, stands for: true for gpuform's own
	// drop-in (sysctl, limits), which that gpuform wrote whole, so every
	// key of InFile is the recorded spec's; false for a file shared with
	// the operator (nccl.conf), where such a record keeps other specs off
	// those keys but gives none of them to the recorded spec to remove.
	WholeFileRecord bool
}

// Step is one idempotent remote action. Each step is atomic on its own:
// a file is either the old or the new content, a package is either the
// old or the new version.
type Step struct {
	// Description says what the step does, for progress and errors.
	Description string `json:"description"`
	// Script is the POSIX sh script run on the node: the nodesh prelude,
	// the step's values as positional parameters, and one of scripts/*.sh.
	// It addresses every file as "$R/…" with R=${GPUFORM_ROOT:-}, so it
	// works on simulated roots.
	Script string `json:"script"`
	// Input, when not empty, is given to Script on standard input (file
	// content), so that content never has to be quoted into the script.
	Input string `json:"input,omitempty"`
	// Become runs the step with the transport's privilege escalation.
	Become bool `json:"become"`
	// Check, when not empty, is a POSIX sh script that changes nothing and
	// says in advance whether the step can succeed, for what the node can
	// show before apply starts (the registry an image is pulled from
	// answers): plan runs it on the host after the diff, and apply again
	// before its first step. It exits 0 when the step can run (printing
	// "unchecked: WHY" when it could not tell, which plan shows), and
	// otherwise exits non-zero with one line on standard error saying why.
	Check string `json:"check,omitempty"`
}

// diffAction derives the action from before and after values: an
// attribute changes when its text or its kind does.
func diffAction(before, after Values) Action {
	switch {
	case before == nil && after == nil:
		return NoOp
	case before == nil:
		return Create
	case after == nil:
		return Delete
	}
	if len(before) != len(after) {
		return Update
	}
	for k, v := range after {
		if b, ok := before[k]; !ok || b != v {
			return Update
		}
	}
	return NoOp
}

// Order sorts resources so that each comes after everything it depends
// on, keeping the given order otherwise. A dependency on a resource that
// is not in rs is ignored (the resource is simply not managed). A cycle is
// a bug in this package and is reported as an error.
func Order(rs []Resource) ([]Resource, error) {
	index := map[string]int{}
	for i, r := range rs {
		if _, dup := index[r.Name()]; dup {
			return nil, fmt.Errorf("resource %s declared twice", r.Name())
		}
		index[r.Name()] = i
	}
	const (
		unvisited = iota
		visiting
		done
	)
	state := make([]int, len(rs))
	var out []Resource
	var visit func(i int, path []string) error
	visit = func(i int, path []string) error {
		switch state[i] {
		case done:
			return nil
		case visiting:
			return fmt.Errorf("dependency cycle: %s", strings.Join(append(path, rs[i].Name()), " → "))
		}
		state[i] = visiting
		deps := append([]string(nil), rs[i].DependsOn()...)
		sort.SliceStable(deps, func(a, b int) bool { return index[deps[a]] < index[deps[b]] })
		for _, d := range deps {
			j, ok := index[d]
			if !ok {
				continue
			}
			if err := visit(j, append(path, rs[i].Name())); err != nil {
				return err
			}
		}
		state[i] = done
		out = append(out, rs[i])
		return nil
	}
	for i := range rs {
		if err := visit(i, nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// base carries the name and dependencies every resource has.
type base struct {
	name string
	deps []string
}

func (b base) Name() string        { return b.name }
func (b base) DependsOn() []string { return b.deps }

// change starts a Change for b from before and after.
func (b base) change(before, after Values) Change {
	return Change{Resource: b.name, Action: diffAction(before, after), Before: before, After: after, DependsOn: b.deps}
}
