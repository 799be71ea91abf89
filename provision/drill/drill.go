// Package drill injects faults into simulated nodes and reports whether
// verify catches each one, by which check, what health mode would do
// about it and how long the catching run took: a gate proven against
// the faults it is for, on a laptop, before a real node shows one.
//
// Hardware faults are written as the simulated profiles write theirs
// (provision/sim's @faults lines, planted with sim.PlantFaults), so each
// shows on every layer the profiles derive from one description: sysfs,
// the simulated NVML, nvidia-smi and the bench replays. Software state
// (a stopped unit, a mount, a loaded driver) is changed in the node's root
// files, the same files the stand-ins (systemctl, mount) change.
package drill

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gpuform/gpuform/internal/lazyre"
	"github.com/gpuform/gpuform/provision/health"
	"github.com/gpuform/gpuform/provision/sim"
	"github.com/gpuform/gpuform/provision/verify"
	"github.com/gpuform/gpuform/provision/verify/report"
)

// BaseProfile is the simulated node every drill starts from: the
// converged HGX H100, whose device addresses the catalogue names.
const BaseProfile = "hgx-h100-converged"

// Fault is one drill of the catalogue.
type Fault struct {
	// Name is how -fault names it ("gpu-off-bus").
	Name string
	// Summary says what the fault is, for the report.
	Summary string
	// Layers are the layers of the node the fault shows on.
	Layers []string
	// Plant is the fault in provision/sim's @faults lines; "" when the
	// fault is software state only.
	Plant string
	// Edit changes the node's root files (software state, and the
	// kernel log a profile writes by hand); nil when none.
	Edit func(root string) error
	// Group, when above 0, is how many healthy peers the faulty node is
	// verified with, as one node group at the fleet tier (the spec's
	// group node block, its nccl_test and pairwise isolation): a fault
	// only a multi-node run shows. The faulty node is the group's last,
	// so that with two peers the first pair is healthy and isolation
	// has a known-good node to re-pair it with.
	Group int
}

// Catalogue is every drill, in the order the report lists them. The
// addresses are the HGX H100 hardware layer's: GPU 4 is 0000:9d:00.0,
// GPU 5 0000:c3:00.0; mlx5_3 and mlx5_5 are compute rails.
func Catalogue() []Fault {
	return []Fault{
		{
			Name:    "gpu-off-bus",
			Summary: "GPU 4 (0000:9d:00.0) falls off the bus, Xid 79",
			Layers:  []string{"NVML", "nvidia-smi", "dmesg"},
			Plant:   "gpu 0000:9d:00.0 off_bus xid=79\n",
			Edit: appendFile("var/lib/gpuform-sim/kmsg",
				"2026-11-30T02:13:05,118214+00:00 NVRM: Xid (PCI:0000:9d:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n"),
		},
		{
			Name:    "nvlink-down",
			Summary: "NVLink link 0 of GPU 4 (0000:9d:00.0) down",
			Layers:  []string{"NVML", "nvidia-smi topo -m"},
			Plant:   "gpu 0000:9d:00.0 nvlink_down\n",
		},
		{
			Name:    "rail-nic-down",
			Summary: "compute rail mlx5_5 down (port Polling)",
			Layers:  []string{"sysfs", "bench"},
			Plant:   "nic mlx5_5 state=\"1: DOWN\" phys_state=\"2: Polling\"\n",
		},
		{
			Name:    "rail-nic-trained-low",
			Summary: "compute rail mlx5_3 up at 200 Gb/s instead of 400",
			Layers:  []string{"sysfs", "bench"},
			Plant:   "nic mlx5_3 rate=\"200 Gb/sec (4X HDR)\"\n",
		},
		{
			Name:    "pcie-downgraded",
			Summary: "GPU 5 (0000:c3:00.0) trained at PCIe x8 of x16",
			Layers:  []string{"sysfs", "NVML", "nvidia-smi", "bench"},
			Plant:   "gpu 0000:c3:00.0 width=8\n",
		},
		{
			Name:    "ecc-remap-pending",
			Summary: "a row remap of GPU 5 (0000:c3:00.0) waits for a GPU reset",
			Layers:  []string{"NVML", "nvidia-smi"},
			Plant:   "gpu 0000:c3:00.0 remap_pending\n",
		},
		{
			Name:    "thermal-throttle",
			Summary: "GPU 5 (0000:c3:00.0) held down by a hardware thermal slowdown",
			Layers:  []string{"NVML", "nvidia-smi"},
			Plant:   "gpu 0000:c3:00.0 thermal_slowdown\n",
		},
		{
			Name:    "fabric-manager-stopped",
			Summary: "nvidia-fabricmanager stopped on an NVSwitch node",
			Layers:  []string{"systemd"},
			// What the systemctl stand-in's stop does: the unit's
			// invocation record goes.
			Edit: removeFile("run/systemd/units/invocation:nvidia-fabricmanager.service"),
		},
		{
			Name:    "driver-library-mismatch",
			Summary: "half upgrade: the 550.127.08 libraries installed, the 550.54.14 kernel module still loaded",
			Layers:  []string{"procfs", "NVML"},
			Edit:    loadedDriver("550.54.14"),
		},
		{
			Name:    "shm-too-small",
			Summary: "/dev/shm mounted at 64 MB (Docker's default) instead of half the memory",
			Layers:  []string{"mounts"},
			Edit:    shmSize("65536k"),
		},
		{
			Name:    "slow-node",
			Summary: "one node of a group of 3 slow in multi-node runs: compute rail mlx5_5 up at 200 Gb/s of 400, rails not named to verify",
			Layers:  []string{"sysfs", "bench", "mpirun (nccl-tests)"},
			Plant:   "nic mlx5_5 rate=\"200 Gb/sec (4X HDR)\"\n",
			Group:   2,
		},
	}
}

// Select returns the catalogue's faults named, in catalogue order; none
// named is every fault. CheckpointDrill is known and selects no fault
// (the checkpoint-restore drill runs the spec's workload, not a fault of
// the catalogue). An unknown name is an error listing the known.
func Select(names []string) ([]Fault, error) {
	all := Catalogue()
	if len(names) == 0 {
		return all, nil
	}
	var out []Fault
	for _, f := range all {
		if slices.Contains(names, f.Name) {
			out = append(out, f)
		}
	}
	for _, n := range names {
		if n == CheckpointDrill {
			continue
		}
		if !slices.ContainsFunc(all, func(f Fault) bool { return f.Name == n }) {
			known := make([]string, len(all), len(all)+1)
			for i, f := range all {
				known[i] = f.Name
			}
			known = append(known, CheckpointDrill)
			return nil, fmt.Errorf("unknown drill %q (known: %s)", n, strings.Join(known, ", "))
		}
	}
	return out, nil
}

// VerifyFunc runs verify on the simulated node host, whose root lives in
// the state directory stateDir, as `gpuform verify` would.
type VerifyFunc func(ctx context.Context, host, stateDir string) (*report.Document, error)

// GroupVerifyFunc runs verify -tier fleet on the simulated hosts as one
// node group (the spec's group node block), their roots in stateDir.
type GroupVerifyFunc func(ctx context.Context, hosts []string, stateDir string) (*report.Document, error)

// AlertsFunc returns the alerts the spec's rules fire over the metrics
// of a node's verify report; name names the node's drill.
type AlertsFunc func(ctx context.Context, name string, doc *report.Document) ([]string, error)

// Options are what Run needs.
type Options struct {
	// Faults are the drills to run.
	Faults []Fault
	// StateDir is an empty directory the drill's simulated nodes are
	// made in, one directory per fault (never the spec's own nodes).
	StateDir string
	// Verify runs verify on one node.
	Verify VerifyFunc
	// VerifyGroup runs verify on a node group, for the faults with a
	// Group; nil fails those faults.
	VerifyGroup GroupVerifyFunc
	// Policy is health mode's, to say what it would do.
	Policy health.Policy
	// Disabled are check ids (without "[gpuN]") whose failures the drill
	// does not count: a drill run with a check removed, to see what
	// else, if anything, catches its faults.
	Disabled []string
	// Alerts evaluates the spec's alerting rules over a node's verify
	// report and returns the alerts that fire; nil leaves alerts not
	// evaluated (AlertsBy says why).
	Alerts AlertsFunc
	// AlertsBy says how alerts were evaluated ("promtool test rules"),
	// or why not.
	AlertsBy string
	// Checkpoints are the hosts the checkpoint-restore drill runs the
	// spec's workload on (CheckpointDrill); Open opens them.
	Checkpoints []CheckpointTarget
	Open        OpenFunc
	// Parallelism bounds how many checkpoint targets run at once; 0 or
	// less is all of them.
	Parallelism int
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// Result is one fault's outcome.
type Result struct {
	// Name and Summary are the fault's.
	Name    string `json:"name"`
	Summary string `json:"summary"`
	// Layers the fault was injected on.
	Layers []string `json:"layers"`
	// Detected is true when a check verify runs failed on the faulty
	// node and passed on the healthy one.
	Detected bool `json:"detected"`
	// Check is the first such check ("nvml.pcie_link[gpu5]"); Checks
	// all of them.
	Check  string   `json:"check,omitempty"`
	Checks []string `json:"checks,omitempty"`
	// Remedy is the remediation catalogue's action class for Check
	// (reset_gpu, reboot, config, rma…) and its words.
	Remedy   string `json:"remedy,omitempty"`
	RemedyDo string `json:"remedy_do,omitempty"`
	// Action is what health mode does with the node: "drain",
	// "drain after a confirming run", "watch" or "none".
	Action string `json:"action"`
	// DrainReason is the Slurm drain reason health mode would set.
	DrainReason string `json:"drain_reason,omitempty"`
	// Alerts are the spec's alerts that fire on the faulty node and not
	// on the healthy one (Report.AlertsBy says how they were evaluated);
	// Alert is the first of them.
	Alert  string   `json:"alert,omitempty"`
	Alerts []string `json:"alerts,omitempty"`
	// Group are the hosts verified together, the faulty one last, for a
	// fault only a multi-node run shows; GroupFailures the checks that
	// failed on a healthy peer too (the group's run: they tell the
	// group, not the node, and are not counted).
	Group         []string `json:"group,omitempty"`
	GroupFailures []string `json:"group_failures,omitempty"`
	// TimeToDetect is how long the verify run that caught it took.
	TimeToDetect time.Duration `json:"time_to_detect_ns"`
	// Error says why the drill could not run; it fails the drill.
	Error string `json:"error,omitempty"`
}

// Report is a drill run's outcome.
type Report struct {
	// Base is the simulated profile the faults were injected into.
	Base string `json:"base_profile"`
	// Disabled are the checks not counted.
	Disabled []string `json:"disabled_checks,omitempty"`
	// Baseline lists the checks that failed on the healthy node: they
	// cannot tell a fault, so they are not counted for any.
	Baseline []string `json:"baseline_failures,omitempty"`
	// AlertsBy says how alerts were evaluated, or why they were not.
	AlertsBy string `json:"alerts_by"`
	// BaselineAlerts fire on the healthy node too, and are not counted.
	BaselineAlerts []string `json:"baseline_alerts,omitempty"`
	// Faults are the results, in catalogue order.
	Faults []Result `json:"faults"`
	// Checkpoints are the checkpoint-restore drill's results, one per
	// host, in the spec's order.
	Checkpoints []CheckpointResult `json:"checkpoints,omitempty"`
	// CheckpointsNotRun names the node blocks with a checkpoint block
	// the checkpoint drill did not run on, and why: not run, not passed.
	CheckpointsNotRun []string `json:"checkpoints_not_run,omitempty"`
}

// OK is true when every fault was caught and every checkpoint restore
// passed, and the drill ran something.
func (r *Report) OK() bool {
	for _, f := range r.Faults {
		if !f.Detected || f.Error != "" {
			return false
		}
	}
	for _, c := range r.Checkpoints {
		if !c.Passed || c.Error != "" {
			return false
		}
	}
	return len(r.Faults)+len(r.Checkpoints) > 0
}

// Run verifies a healthy node, then one node per fault, all at once, and
// judges each fault by the checks its node failed that the healthy one
// passed.
func Run(ctx context.Context, o Options) (*Report, error) {
	if (o.Verify == nil && len(o.Faults) > 0) || o.StateDir == "" || (o.Open == nil && len(o.Checkpoints) > 0) {
		return nil, errors.New("drill: StateDir, Verify for faults and Open for checkpoints are required")
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	rep := &Report{Base: BaseProfile, Disabled: o.Disabled, AlertsBy: o.AlertsBy, Faults: make([]Result, len(o.Faults))}
	var wg sync.WaitGroup
	rep.Checkpoints = make([]CheckpointResult, len(o.Checkpoints))
	slots := o.Parallelism
	if slots <= 0 {
		slots = max(1, len(o.Checkpoints))
	}
	sem := make(chan struct{}, slots)
	for i := range o.Checkpoints {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			rep.Checkpoints[i] = checkpointOn(ctx, o, i, now)
		})
	}
	if len(o.Faults) == 0 {
		wg.Wait()
		return rep, nil
	}
	var baseline *report.Document
	var baseErr error
	wg.Go(func() {
		baseline, _, baseErr = inject(ctx, o, "baseline", nil, now)
	})
	runs := make([]nodeRun, len(o.Faults))
	errs := make([]error, len(o.Faults))
	for i := range o.Faults {
		wg.Go(func() {
			if o.Faults[i].Group > 0 {
				runs[i], errs[i] = injectGroup(ctx, o, &o.Faults[i], now)
				return
			}
			var r nodeRun
			r.doc, r.took, errs[i] = inject(ctx, o, o.Faults[i].Name, &o.Faults[i], now)
			runs[i] = r
		})
	}
	wg.Wait()
	if baseErr != nil {
		return nil, fmt.Errorf("drill: the healthy node: %w", baseErr)
	}
	healthy := failing(baseline, nil)
	rep.Baseline = healthy
	var alertsOf func(name string, doc *report.Document) ([]string, error)
	if o.Alerts != nil {
		base, err := o.Alerts(ctx, "baseline", baseline)
		if err != nil {
			return nil, fmt.Errorf("drill: alerts on the healthy node: %w", err)
		}
		rep.BaselineAlerts = base
		alertsOf = func(name string, doc *report.Document) ([]string, error) {
			fired, err := o.Alerts(ctx, name, doc)
			var out []string
			for _, a := range fired {
				if !slices.Contains(base, a) {
					out = append(out, a)
				}
			}
			return out, err
		}
	}
	for i, f := range o.Faults {
		r := Result{Name: f.Name, Summary: f.Summary, Layers: f.Layers, Action: "none"}
		if errs[i] != nil {
			r.Error = errs[i].Error()
			rep.Faults[i] = r
			continue
		}
		r.TimeToDetect = runs[i].took
		r.Group, r.GroupFailures = runs[i].group, runs[i].peerFailing
		if alertsOf != nil {
			fired, err := alertsOf(f.Name, runs[i].doc)
			if err != nil {
				r.Error = "alerts: " + err.Error()
			}
			r.Alerts = fired
			if len(fired) > 0 {
				r.Alert = fired[0]
			}
		}
		doc := counted(runs[i].doc, append(slices.Clone(healthy), runs[i].peerFailing...), o.Disabled)
		r.Checks = failing(doc, nil)
		if len(r.Checks) > 0 {
			r.Detected = true
			r.Check = r.Checks[0]
			for _, c := range doc.Hosts[0].Checks {
				if c.ID == r.Check && c.Remedy != nil {
					r.Remedy, r.RemedyDo = string(c.Remedy.Action), c.Remedy.Do
				}
			}
			d := health.Decide(doc, &health.State{}, now(), o.Policy)
			switch {
			case d.Drain && len(d.Confirm) > 0:
				r.Action = "drain after a confirming run"
			case d.Drain:
				r.Action = "drain"
			case len(d.Watching) > 0:
				r.Action = "watch"
			}
			if d.Drain {
				r.DrainReason = health.Reason(d.Reason)
			}
		}
		rep.Faults[i] = r
	}
	return rep, nil
}

// checkpointOn runs the checkpoint drill on the i-th target: made first
// when it is simulated, in a directory of its own.
func checkpointOn(ctx context.Context, o Options, i int, now func() time.Time) CheckpointResult {
	tg := o.Checkpoints[i]
	fail := func(err error) CheckpointResult {
		return CheckpointResult{Node: tg.Node, Host: tg.Host.Name, Simulated: tg.Profile != "", GPUs: tg.GPUs, Error: err.Error()}
	}
	dir := ""
	if tg.Profile != "" {
		dir = filepath.Join(o.StateDir, fmt.Sprintf("checkpoint-%d", i))
		if err := os.Mkdir(dir, 0o700); err != nil {
			return fail(err)
		}
		if _, err := sim.MaterializeHost(tg.Host.Name, dir); err != nil {
			return fail(err)
		}
	}
	t, err := o.Open(ctx, tg, dir)
	if err != nil {
		return fail(err)
	}
	defer t.Close()
	return runCheckpoint(ctx, t, tg, now)
}

// inject makes a fresh simulated node for the fault (nil: a healthy
// one), plants it and verifies the node.
func inject(ctx context.Context, o Options, name string, f *Fault, now func() time.Time) (*report.Document, time.Duration, error) {
	dir := filepath.Join(o.StateDir, name)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, 0, err
	}
	host := sim.Scheme + BaseProfile + "/drill-" + name
	root, err := sim.MaterializeHost(host, dir)
	if err != nil {
		return nil, 0, err
	}
	if f != nil {
		if f.Plant != "" {
			if err := sim.PlantFaults(root, []byte(f.Plant)); err != nil {
				return nil, 0, fmt.Errorf("planting %s: %w", f.Name, err)
			}
		}
		if f.Edit != nil {
			if err := f.Edit(root); err != nil {
				return nil, 0, fmt.Errorf("injecting %s: %w", f.Name, err)
			}
		}
	}
	start := now()
	doc, err := o.Verify(ctx, host, dir)
	if err != nil {
		return nil, 0, err
	}
	if len(doc.Hosts) != 1 {
		return nil, 0, fmt.Errorf("verify reported %d hosts, want 1", len(doc.Hosts))
	}
	return doc, now().Sub(start), nil
}

// nodeRun is the verify run of a fault's node.
type nodeRun struct {
	// doc reports the faulty node alone.
	doc  *report.Document
	took time.Duration
	// group and peerFailing are a group fault's hosts and the blocking
	// checks that failed on any healthy peer.
	group       []string
	peerFailing []string
}

// injectGroup makes f.Group healthy simulated nodes and one faulty node
// in one state directory (the simulated mpirun finds each participant's
// root there), plants the fault in the last and verifies them as one
// node group.
func injectGroup(ctx context.Context, o Options, f *Fault, now func() time.Time) (nodeRun, error) {
	if o.VerifyGroup == nil {
		return nodeRun{}, errors.New("this drill verifies a node group, and the drill was given no way to (no node block of several hosts with an nccl_test)")
	}
	dir := filepath.Join(o.StateDir, f.Name)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nodeRun{}, err
	}
	var hosts []string
	for i := 1; i <= f.Group+1; i++ {
		host := fmt.Sprintf("%s%s/drill-%s-%d", sim.Scheme, BaseProfile, f.Name, i)
		root, err := sim.MaterializeHost(host, dir)
		if err != nil {
			return nodeRun{}, err
		}
		if i == f.Group+1 && f.Plant != "" {
			if err := sim.PlantFaults(root, []byte(f.Plant)); err != nil {
				return nodeRun{}, fmt.Errorf("planting %s: %w", f.Name, err)
			}
		}
		if i == f.Group+1 && f.Edit != nil {
			if err := f.Edit(root); err != nil {
				return nodeRun{}, fmt.Errorf("injecting %s: %w", f.Name, err)
			}
		}
		hosts = append(hosts, host)
	}
	start := now()
	doc, err := o.VerifyGroup(ctx, hosts, dir)
	if err != nil {
		return nodeRun{}, err
	}
	took := now().Sub(start)
	if len(doc.Hosts) != len(hosts) {
		return nodeRun{}, fmt.Errorf("verify reported %d hosts, want %d", len(doc.Hosts), len(hosts))
	}
	faulty := hosts[len(hosts)-1]
	run := nodeRun{took: took, group: hosts}
	for _, h := range doc.Hosts {
		if h.Host == faulty {
			one := *doc
			one.Hosts = []report.Host{h}
			run.doc = &one
			continue
		}
		for _, c := range h.Checks {
			if c.Blocks() && !slices.Contains(run.peerFailing, c.ID) {
				run.peerFailing = append(run.peerFailing, c.ID)
			}
		}
	}
	if run.doc == nil {
		return nodeRun{}, fmt.Errorf("verify did not report the faulty node %s", faulty)
	}
	return run, nil
}

// failing lists the blocking checks of the document's host.
func failing(doc *report.Document, _ []string) []string {
	var out []string
	for _, c := range doc.Hosts[0].Checks {
		if c.Blocks() {
			out = append(out, c.ID)
		}
	}
	return out
}

// counted is doc without the checks the healthy node failed too and the
// disabled ones: what is left tells the fault.
func counted(doc *report.Document, healthy, disabled []string) *report.Document {
	h := doc.Hosts[0]
	var keep []verify.CheckResult
	for _, c := range h.Checks {
		base, _, _ := strings.Cut(c.ID, "[")
		// A check named per test ("nccl_isolation.group") is disabled
		// by its check id ("nccl_isolation").
		named := slices.ContainsFunc(disabled, func(d string) bool { return strings.HasPrefix(c.ID, d+".") })
		if slices.Contains(healthy, c.ID) || slices.Contains(disabled, base) || slices.Contains(disabled, c.ID) || named {
			continue
		}
		keep = append(keep, c)
	}
	h.Checks = keep
	out := *doc
	out.Hosts = []report.Host{h}
	return &out
}

func appendFile(rel, text string) func(string) error {
	return func(root string) error {
		p := filepath.Join(root, filepath.FromSlash(rel))
		f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		if _, err := f.WriteString(text); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
}

func removeFile(rel string) func(string) error {
	return func(root string) error {
		return os.Remove(filepath.Join(root, filepath.FromSlash(rel)))
	}
}

// replaceIn rewrites the first match of re in a root file.
func replaceIn(rel string, re *regexp.Regexp, with string) func(string) error {
	return func(root string) error {
		p := filepath.Join(root, filepath.FromSlash(rel))
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if !re.Match(b) {
			return fmt.Errorf("%s: nothing matches %s", rel, re)
		}
		return os.WriteFile(p, re.ReplaceAll(b, []byte(with)), 0o644)
	}
}

var (
	loadedVersion = lazyre.New(`Kernel Module(?: for x86_64)?\s+[0-9.]+`)
	shmMount      = lazyre.New(`(tmpfs /dev/shm tmpfs [^\n]*size=)[0-9]+k`)
)

// loadedDriver makes /proc/driver/nvidia/version say the module of
// version v is loaded, as after a package upgrade without a reboot.
func loadedDriver(v string) func(string) error {
	return func(root string) error {
		p := filepath.Join(root, "proc", "driver", "nvidia", "version")
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		m := loadedVersion.Get().Find(b)
		if m == nil {
			return errors.New("proc/driver/nvidia/version names no kernel module version")
		}
		i := strings.LastIndexAny(string(m), " \t")
		return os.WriteFile(p, []byte(strings.Replace(string(b), string(m), string(m[:i+1])+v, 1)), 0o644)
	}
}

func shmSize(size string) func(string) error {
	return replaceIn("proc/mounts", shmMount.Get(), "${1}"+size)
}
