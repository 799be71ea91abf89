package apply_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/provision/apply"
	"github.com/gpuform/gpuform/provision/plan"
	"github.com/gpuform/gpuform/provision/plan/plantest"
	"github.com/gpuform/gpuform/spec"
)

// loadSpec loads a testdata spec with its hosts variable (and, for
// node.gpuform.hcl, the default) replaced by hosts.
func loadSpec(t testing.TB, file string, hosts []string, edits ...string) *spec.Config {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	list := `["` + strings.Join(hosts, `", "`) + `"]`
	text := strings.Replace(string(src), `default = ["sim://hgx-h100-stale/1"]`, "default = "+list, 1)
	text = strings.Replace(text, "  type = list(string)\n}", "  type = list(string)\n  default = "+list+"\n}", 1)
	for i := 0; i+1 < len(edits); i += 2 {
		text = strings.Replace(text, edits[i], edits[i+1], 1)
	}
	return plantest.LoadSpec(t, map[string]string{file: text})
}

func mustPlan(t testing.TB, f *plantest.Fleet, cfg *spec.Config) *plan.Plan {
	t.Helper()
	p, err := f.Plan(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range p.Hosts {
		if h.Error != "" {
			t.Fatalf("plan %s: %s", h.Host, h.Error)
		}
	}
	return p
}

func opts(f *plantest.Fleet) apply.Options {
	return apply.Options{KB: testKB, Target: f.Options(), Owner: "test@ctl pid 1", RebootPoll: time.Millisecond, RebootTimeout: time.Minute}
}

func statuses(rep *apply.Report) map[string]apply.Status {
	out := map[string]apply.Status{}
	for _, h := range rep.Hosts {
		out[h.Host] = h.Status
	}
	return out
}

const stale = "sim://hgx-h100-stale/1"

// dpkgStatus parses dpkg's status file (deb822 stanzas separated by blank
// lines) into each package's Status field.
func dpkgStatus(text string) map[string]string {
	out := map[string]string{}
	for stanza := range strings.SplitSeq(text, "\n\n") {
		fields := map[string]string{}
		for line := range strings.Lines(stanza) {
			if k, v, ok := strings.Cut(strings.TrimRight(line, "\n"), ": "); ok && !strings.HasPrefix(line, " ") {
				fields[k] = v
			}
		}
		if p := fields["Package"]; p != "" {
			out[p] = fields["Status"]
		}
	}
	return out
}

// sysctlKeys parses a sysctl.d file as sysctl.d(5) reads it: "key = value"
// lines, comments (# or ;) and blank lines skipped.
func sysctlKeys(text string) map[string]string {
	out := map[string]string{}
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		k, v, _ := strings.Cut(line, "=")
		out[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return out
}

func TestApplyConvergesAndIsIdempotent(t *testing.T) {
	t.Parallel()
	f := plantest.Start(t)
	cfg := loadSpec(t, "node.gpuform.hcl", []string{stale})
	ctx := context.Background()

	p := mustPlan(t, f, cfg)
	if !p.HasChanges() {
		t.Fatal("the stale node has no changes")
	}
	rep := apply.Apply(ctx, cfg, p, opts(f))
	h := rep.Hosts[0]
	if h.Status != apply.RebootPending || h.Error != "" || h.StepsRun != h.StepsPlanned {
		t.Fatalf("first apply: %+v", h)
	}
	if !rep.Converged() {
		t.Error("report not converged")
	}
	// What the stand-ins were asked to do, in dependency order: the driver
	// before fabric manager, the toolkit before Docker's restart. Fabric
	// manager is only enabled and nvidia-peermem not loaded: both need the
	// new driver, which runs after the reboot.
	calls := f.Calls(stale)
	order := []string{"apt-get install", "apt-mark hold cuda-drivers-550", "apt-get install -y -q --no-install-recommends --allow-downgrades --allow-change-held-packages -o DPkg::Lock::Timeout=120 -o Dpkg::Options::=--force-confold nvidia-fabricmanager-550=550.127.08-1 nvidia-fabricmanager-535-", "systemctl enable nvidia-fabricmanager.service", "systemctl try-restart docker.service", "update-grub"}
	i := 0
	for _, c := range calls {
		if i < len(order) && strings.HasPrefix(c, order[i]) {
			i++
		}
	}
	if i != len(order) {
		t.Errorf("stand-in calls out of order or missing %q:\n%s", order[i], strings.Join(calls, "\n"))
	}
	for _, c := range calls {
		if strings.HasPrefix(c, "modprobe nvidia_peermem") || strings.HasPrefix(c, "systemctl enable --now nvidia-") {
			t.Errorf("%q ran against the old driver", c)
		}
	}
	if diff := cmp.Diff("hold ok installed", dpkgStatus(f.ReadFile(stale, "/var/lib/dpkg/status"))["cuda-drivers-550"]); diff != "" {
		t.Errorf("driver package not held after apply: Status (-want +got):\n%s", diff)
	}

	// The next plan has nothing to change; only the reboot is pending.
	p2 := mustPlan(t, f, cfg)
	if p2.HasChanges() {
		var b strings.Builder
		plan.RenderText(&b, p2, plan.RenderOptions{})
		t.Fatalf("plan after apply has changes:\n%s", b.String())
	}
	if !p2.Hosts[0].RebootPending {
		t.Error("driver and kernel arguments should wait for a reboot")
	}

	// Applying again runs no step and no command at all beyond the plan's probe.
	before, execs := len(f.Calls(stale)), f.Execs()
	rep = apply.Apply(ctx, cfg, p2, opts(f))
	if rep.Hosts[0].StepsRun != 0 || rep.Hosts[0].Status != apply.RebootPending {
		t.Errorf("second apply: %+v", rep.Hosts[0])
	}
	if got := f.Calls(stale)[before:]; len(got) != 0 {
		t.Errorf("second apply called stand-ins: %q", got)
	}
	if d := f.Execs() - execs; d != 0 {
		t.Errorf("second apply ran %d remote commands, want 0", d)
	}
}

func TestApplyRebootWhenAllowed(t *testing.T) {
	t.Parallel()
	f := plantest.Start(t)
	cfg := loadSpec(t, "node.gpuform.hcl", []string{stale}, "max_failures = 1", "max_failures = 1\n    reboot = \"allow\"")
	rep := apply.Apply(context.Background(), cfg, mustPlan(t, f, cfg), opts(f))
	if h := rep.Hosts[0]; h.Status != apply.Rebooted {
		t.Fatalf("status %q (%s), want rebooted", h.Status, h.Error)
	}
	if v := f.ReadFile(stale, "/proc/driver/nvidia/version"); !strings.Contains(v, "550.127.08") {
		t.Errorf("after reboot the loaded driver is %q", v)
	}
	if p := mustPlan(t, f, cfg); p.HasChanges() || p.Hosts[0].RebootPending {
		t.Error("after the reboot the host still differs")
	}
}

func TestDaemonJSONKeepsUserKeys(t *testing.T) {
	t.Parallel()
	f := plantest.Start(t)
	cfg := loadSpec(t, "node.gpuform.hcl", []string{stale})
	user := `{
  "log-driver": "json-file",
  "log-opts": {"max-size": "100m", "max-file": "3"},
  "registry-mirrors": ["https://mirror.example.com"],
  "max-concurrent-downloads": 12,
  "runtimes": {"crun": {"path": "/usr/bin/crun"}},
  "default-ulimits": {"nofile": {"Name": "nofile", "Soft": 65536, "Hard": 65536}}
}
`
	f.WriteFile(stale, "/etc/docker/daemon.json", user)
	rep := apply.Apply(context.Background(), cfg, mustPlan(t, f, cfg), opts(f))
	if !rep.Converged() {
		t.Fatalf("apply: %+v", rep.Hosts[0])
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(f.ReadFile(stale, "/etc/docker/daemon.json")), &got); err != nil {
		t.Fatal(err)
	}
	// Every key the user wrote is kept as written; node.gpuform.hcl's
	// container block adds the nvidia runtime beside crun, makes it the
	// default, sets the shm size (16GiB as Docker writes it) and adds
	// memlock (unlimited: -1) and stack (64MiB in bytes) beside nofile.
	want := map[string]any{
		"log-driver":               "json-file",
		"log-opts":                 map[string]any{"max-size": "100m", "max-file": "3"},
		"registry-mirrors":         []any{"https://mirror.example.com"},
		"max-concurrent-downloads": float64(12),
		"runtimes": map[string]any{
			"crun":   map[string]any{"path": "/usr/bin/crun"},
			"nvidia": map[string]any{"path": "nvidia-container-runtime", "args": []any{}},
		},
		"default-ulimits": map[string]any{
			"nofile":  map[string]any{"Name": "nofile", "Soft": float64(65536), "Hard": float64(65536)},
			"memlock": map[string]any{"Name": "memlock", "Soft": float64(-1), "Hard": float64(-1)},
			"stack":   map[string]any{"Name": "stack", "Soft": float64(64 << 20), "Hard": float64(64 << 20)},
		},
		"default-runtime":  "nvidia",
		"default-shm-size": "16G",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("daemon.json after apply (-want +got):\n%s", diff)
	}
	// The previous file is kept as a timestamped backup.
	backups, _ := filepath.Glob(filepath.Join(f.Root(stale), "var/lib/gpuform/backup/*/etc/docker/daemon.json"))
	if len(backups) != 1 {
		t.Fatalf("backups of daemon.json: %v", backups)
	}
	if b, _ := os.ReadFile(backups[0]); string(b) != user {
		t.Errorf("backup holds %q, want the user's file", b)
	}
}

// leftovers lists temporary files a write step would leave if it were cut
// short.
func leftovers(t *testing.T, root string) []string {
	var out []string
	filepath.WalkDir(filepath.Join(root, "etc"), func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), ".gpuform-") {
			out = append(out, p)
		}
		return nil
	})
	return out
}

func TestFailedStepLeavesNoPartialFileAndNextApplyConverges(t *testing.T) {
	t.Parallel()
	f := plantest.Start(t)
	cfg := loadSpec(t, "node.gpuform.hcl", []string{stale})
	// update-grub fails midway through the steps, after daemon.json,
	// fstab and the sysctl drop-in were written.
	f.Fail(stale, "update-grub", "update-grub: /boot/grub/grub.cfg: Read-only file system")
	rep := apply.Apply(context.Background(), cfg, mustPlan(t, f, cfg), opts(f))
	h := rep.Hosts[0]
	if h.Status != apply.Failed || !strings.HasPrefix(h.FailedStep, "kernel_cmdline: ") || !strings.Contains(h.Error, "Read-only file system") {
		t.Fatalf("apply: %+v", h)
	}
	if h.StepsRun == 0 || h.StepsRun >= h.StepsPlanned {
		t.Errorf("steps run %d of %d: the failure should be midway", h.StepsRun, h.StepsPlanned)
	}
	root := f.Root(stale)
	if l := leftovers(t, root); len(l) != 0 {
		t.Errorf("temporary files left behind: %v", l)
	}
	// The drop-in whose update-grub failed was taken back; later files were
	// never written; earlier ones are complete.
	for _, p := range []string{"etc/default/grub.d/90-gpuform.cfg", "etc/security/limits.d/90-gpuform.conf", "etc/nccl.conf", "etc/gpuform/binding.json"} {
		if _, err := os.Stat(filepath.Join(root, p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("/%s exists after the failed step (err %v)", p, err)
		}
	}
	var daemon map[string]any
	if err := json.Unmarshal([]byte(f.ReadFile(stale, "/etc/docker/daemon.json")), &daemon); err != nil || daemon["default-runtime"] != "nvidia" {
		t.Errorf("daemon.json after the failure: %v, %v", daemon, err)
	}
	// A failed host is not reported as converged.
	if rep.Converged() {
		t.Error("report converged despite the failure")
	}

	f.Unfail(stale, "update-grub")
	p := mustPlan(t, f, cfg)
	var left []string
	for _, rc := range p.Hosts[0].ResourceChanges {
		if rc.Action != 0 {
			left = append(left, rc.Resource)
		}
	}
	if diff := cmp.Diff([]string{"kernel_cmdline", "limits", "cpu_governor", "nccl_conf", "binding"}, left); diff != "" {
		t.Errorf("changes left after the failed apply (-want +got):\n%s", diff)
	}
	rep = apply.Apply(context.Background(), cfg, p, opts(f))
	if !rep.Converged() {
		t.Fatalf("second apply: %+v", rep.Hosts[0])
	}
	if p := mustPlan(t, f, cfg); p.HasChanges() {
		t.Error("not converged after the second apply")
	}
}

func TestConcurrentApplyFailsFast(t *testing.T) {
	f := plantest.Start(t)
	cfg := loadSpec(t, "node.gpuform.hcl", []string{stale})
	ctx := context.Background()
	p := mustPlan(t, f, cfg)

	// Another apply holds the host: the same lock apply takes.
	tr, err := f.Connect(ctx, spec.Host{Name: stale})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	since := time.Date(2026, 11, 30, 1, 2, 3, 0, time.UTC)
	other, err := apply.AcquireLock(ctx, tr, "alice@ctl-2 pid 4242", since)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	rep := apply.Apply(ctx, cfg, p, opts(f))
	elapsed := time.Since(start)
	h := rep.Hosts[0]
	want := "another gpuform apply holds the lock on " + stale + " since 2026-11-30T01:02:03Z (alice@ctl-2 pid 4242)"
	if h.Status != apply.Failed || !strings.Contains(h.Error, want) {
		t.Fatalf("apply under another's lock: %+v\nwant error containing %q", h, want)
	}
	if elapsed > 10*time.Second {
		t.Errorf("took %s to give up; a held lock must fail fast", elapsed)
	}
	if h.StepsRun != 0 || len(f.Calls(stale)) != 0 {
		t.Errorf("steps ran under another apply's lock: %d, calls %q", h.StepsRun, f.Calls(stale))
	}
	// Two applies racing: exactly one gets the lock.
	if err := other.Release(); err != nil {
		t.Fatal(err)
	}
	l1, err1 := apply.AcquireLock(ctx, tr, "a", since)
	tr2, _ := f.Connect(ctx, spec.Host{Name: stale})
	defer tr2.Close()
	_, err2 := apply.AcquireLock(ctx, tr2, "b", since)
	var busy *apply.LockBusyError
	if err1 != nil || !errors.As(err2, &busy) {
		t.Errorf("first lock: %v; second lock: %v (want LockBusyError)", err1, err2)
	}
	l1.Release()

	// Two whole applies at once: the second starts while the first holds
	// the lock (its progress callback runs between steps, under the lock).
	var second *apply.Report
	var secondTook time.Duration
	first := opts(f)
	first.Progress = func(e apply.Event) {
		if second == nil && strings.HasPrefix(e.Message, "step 1/") {
			t0 := time.Now()
			second = apply.Apply(ctx, cfg, p, opts(f))
			secondTook = time.Since(t0)
		}
	}
	rep1 := apply.Apply(ctx, cfg, p, first)
	if second == nil {
		t.Fatal("the first apply ran no step")
	}
	if h := second.Hosts[0]; h.Status != apply.Failed || !strings.Contains(h.Error, "another gpuform apply holds the lock on "+stale+" since ") || h.StepsRun != 0 {
		t.Errorf("second concurrent apply: %+v", h)
	}
	if secondTook > 10*time.Second {
		t.Errorf("second apply took %s to give up", secondTook)
	}
	if !rep1.Converged() {
		t.Errorf("first concurrent apply: %+v", rep1.Hosts[0])
	}
	// Released: the apply goes through.
	if rep := apply.Apply(ctx, cfg, p, opts(f)); !rep.Converged() {
		t.Errorf("apply after release: %+v", rep.Hosts[0])
	}
}

func TestRolloutStopsAtFailureBudget(t *testing.T) {
	t.Parallel()
	f := plantest.Start(t)
	var hosts []string
	for i := 1; i <= 12; i++ {
		hosts = append(hosts, "sim://hgx-h100-stale/"+string(rune('0'+i/10))+string(rune('0'+i%10)))
	}
	cfg := loadSpec(t, "sysctl.gpuform.hcl", hosts)
	// One rigged host in the first batch, one in the second: two failures
	// exceed max_failures = 1, so the third batch never starts.
	f.Fail(hosts[1], "sysctl", "sysctl: permission denied on key vm.swappiness")
	f.Fail(hosts[5], "sysctl", "sysctl: permission denied on key vm.swappiness")
	p := mustPlan(t, f, cfg)
	rep := apply.Apply(context.Background(), cfg, p, opts(f))
	want := map[string]apply.Status{}
	for i, h := range hosts {
		switch {
		case i == 1 || i == 5:
			want[h] = apply.Failed
		case i >= 8:
			want[h] = apply.Skipped
		default:
			want[h] = apply.Succeeded
		}
	}
	if diff := cmp.Diff(want, statuses(rep)); diff != "" {
		t.Errorf("host statuses (-want +got):\n%s", diff)
	}
	if !strings.Contains(rep.Stopped, "batch 3 and later were not started") {
		t.Errorf("Stopped = %q, want it to say batch 3 was not started", rep.Stopped)
	}
	for _, h := range rep.Hosts[8:] {
		if h.Batch != 3 || !strings.Contains(h.Error, "failure budget") {
			t.Errorf("%s: batch %d, error %q", h.Host, h.Batch, h.Error)
		}
		if len(f.Calls(h.Host)) != 0 {
			t.Errorf("%s was touched: %q", h.Host, f.Calls(h.Host))
		}
	}
	if rep.Converged() {
		t.Error("rollout with failures reported converged")
	}
}

func TestInterruptStartsNoNewHost(t *testing.T) {
	f := plantest.Start(t)
	hosts := []string{"sim://hgx-h100-stale/1", "sim://hgx-h100-stale/2", "sim://hgx-h100-stale/3"}
	cfg := loadSpec(t, "sysctl.gpuform.hcl", hosts, "batch        = 4", "batch        = 1")
	p := mustPlan(t, f, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	o := opts(f)
	// Ctrl-C while the first host runs its first step.
	o.Progress = func(e apply.Event) {
		if strings.HasPrefix(e.Message, "step 1/") {
			cancel()
		}
	}
	rep := apply.Apply(ctx, cfg, p, o)
	got := statuses(rep)
	// The first host's step in flight finished; nothing started after it.
	if rep.Hosts[0].StepsRun != 1 || got[hosts[1]] != apply.Skipped || got[hosts[2]] != apply.Skipped {
		t.Errorf("after interrupt: %+v", rep.Hosts)
	}
	if !strings.Contains(rep.Stopped, "interrupted") {
		t.Errorf("Stopped = %q", rep.Stopped)
	}
	// The step in flight completed: the file holds the spec's one key.
	if diff := cmp.Diff(map[string]string{"vm.swappiness": "1"}, sysctlKeys(f.ReadFile(hosts[0], "/etc/sysctl.d/90-gpuform.conf"))); diff != "" {
		t.Errorf("the step in flight did not complete: sysctl.d file (-want +got):\n%s", diff)
	}
}

func TestApplyRHEL(t *testing.T) {
	t.Parallel()
	f := plantest.Start(t)
	const host = "sim://l40s-rocky9"
	cfg := loadSpec(t, "rocky.gpuform.hcl", []string{host})
	rep := apply.Apply(context.Background(), cfg, mustPlan(t, f, cfg), opts(f))
	if h := rep.Hosts[0]; !h.OK() {
		t.Fatalf("apply: %+v\ncalls:\n%s", h, strings.Join(f.Calls(host), "\n"))
	}
	calls := strings.Join(f.Calls(host), "\n")
	for _, want := range []string{"dnf install -y -q --allowerasing nvidia-open-580.95.05", "dnf -q versionlock add nvidia-open", "libnccl-2.25.1-1+cuda12.8 libnccl-devel-2.25.1-1+cuda12.8"} {
		if !strings.Contains(calls, want) {
			t.Errorf("no %q in the stand-in calls:\n%s", want, calls)
		}
	}
	if p := mustPlan(t, f, cfg); p.HasChanges() {
		var b strings.Builder
		plan.RenderText(&b, p, plan.RenderOptions{})
		t.Errorf("not converged:\n%s", b.String())
	}
}

func TestDeleteWhatTheSpecNoLongerAsks(t *testing.T) {
	t.Parallel()
	f := plantest.Start(t)
	cfg := loadSpec(t, "sysctl.gpuform.hcl", []string{stale})
	// An earlier spec set the CPU governor; this one does not.
	f.WriteFile(stale, "/etc/tmpfiles.d/90-gpuform-governor.conf", "# Managed by gpuform.\nw /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor - - - - performance\n")
	p := mustPlan(t, f, cfg)
	var actions []string
	for _, rc := range p.Hosts[0].ResourceChanges {
		actions = append(actions, rc.Resource+" "+rc.Action.String())
	}
	if diff := cmp.Diff([]string{"sysctl update", "cpu_governor delete"}, actions); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
	var b strings.Builder
	plan.RenderText(&b, p, plan.RenderOptions{})
	if !strings.Contains(b.String(), "  # cpu_governor (/etc/tmpfiles.d/90-gpuform-governor.conf) will be destroyed\n  - cpu_governor {") || !strings.Contains(b.String(), "0 to add, 1 to change, 1 to destroy") {
		t.Errorf("plan text:\n%s", b.String())
	}
	if rep := apply.Apply(context.Background(), cfg, p, opts(f)); !rep.Converged() {
		t.Fatalf("apply: %+v", rep.Hosts[0])
	}
	if _, err := os.Stat(filepath.Join(f.Root(stale), "etc/tmpfiles.d/90-gpuform-governor.conf")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("governor file still there: %v", err)
	}
	if p := mustPlan(t, f, cfg); p.HasChanges() {
		t.Error("changes left after the delete")
	}
}

// A node without any NVIDIA driver gets one installed; the driver's
// companions (nvidia-peermem, fabric manager, persistenced) cannot run
// before the new driver is loaded, so they must wait for the reboot rather
// than fail the apply, and the node converges with or without the reboot.
func TestNoDriverNodeConverges(t *testing.T) {
	t.Parallel()
	const host = "sim://no-driver"
	for _, tc := range []struct {
		name, reboot string
		want         apply.Status
	}{
		{"reboot allowed", "allow", apply.Rebooted},
		{"reboot never", "never", apply.RebootPending},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := plantest.Start(t)
			cfg := loadSpec(t, "node.gpuform.hcl", []string{host}, "max_failures = 1", "max_failures = 1\n    reboot = \""+tc.reboot+"\"")
			rep := apply.Apply(context.Background(), cfg, mustPlan(t, f, cfg), opts(f))
			if h := rep.Hosts[0]; h.Status != tc.want || !rep.Converged() {
				t.Fatalf("apply: status %q, want %q (%s)\ncalls:\n%s", h.Status, tc.want, h.Error, strings.Join(f.Calls(host), "\n"))
			}
			p := mustPlan(t, f, cfg)
			if p.HasChanges() {
				var b strings.Builder
				plan.RenderText(&b, p, plan.RenderOptions{})
				t.Fatalf("plan after apply has changes:\n%s", b.String())
			}
			if got := p.Hosts[0].RebootPending; got != (tc.reboot == "never") {
				t.Errorf("reboot pending = %v after apply with reboot %q", got, tc.reboot)
			}
			rep = apply.Apply(context.Background(), cfg, p, opts(f))
			if h := rep.Hosts[0]; h.StepsRun != 0 || !rep.Converged() {
				t.Errorf("second apply: %+v", h)
			}
		})
	}
}

// Kernel arguments the spec no longer lists leave the command line only at
// the next boot: the plan says so, and apply with reboot = "allow" must
// reboot even though the re-probe cannot see what the old drop-in added.
func TestRemovedKernelArgumentsReboot(t *testing.T) {
	t.Parallel()
	f := plantest.Start(t)
	cfg := loadSpec(t, "sysctl.gpuform.hcl", []string{stale}, "max_failures = 1", "max_failures = 1\n    reboot = \"allow\"")
	f.WriteFile(stale, "/etc/default/grub.d/90-gpuform.cfg", "# Managed by gpuform.\nGRUB_CMDLINE_LINUX=\"$GRUB_CMDLINE_LINUX iommu=pt\"\n")
	f.WriteFile(stale, "/proc/cmdline", strings.TrimSpace(f.ReadFile(stale, "/proc/cmdline"))+" iommu=pt\n")
	p := mustPlan(t, f, cfg)
	rep := apply.Apply(context.Background(), cfg, p, opts(f))
	if h := rep.Hosts[0]; h.Status != apply.Rebooted {
		t.Fatalf("status %q (%s), want rebooted", h.Status, h.Error)
	}
	if c := f.ReadFile(stale, "/proc/cmdline"); strings.Contains(c, "iommu=pt") {
		t.Errorf("after the reboot the command line still has iommu=pt: %q", c)
	}
}

// "reboot" returns before the host goes down, and sshd answers for a
// moment longer: a probe in that window must not count as the host being
// back. Here the reboot never happens; apply must not report "rebooted".
func TestRebootThatDidNotHappenIsNoReboot(t *testing.T) {
	t.Parallel()
	f := plantest.Start(t)
	cfg := loadSpec(t, "sysctl.gpuform.hcl", []string{stale}, "max_failures = 1", "max_failures = 1\n    reboot = \"allow\"")
	f.WriteFile(stale, "/etc/default/grub.d/90-gpuform.cfg", "# Managed by gpuform.\nGRUB_CMDLINE_LINUX=\"$GRUB_CMDLINE_LINUX iommu=pt\"\n")
	// A reboot that is accepted and then never happens.
	if err := os.WriteFile(filepath.Join(f.Root(stale), "usr/lib/gpuform-sim/bin/reboot"), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	o := opts(f)
	o.RebootTimeout = 300 * time.Millisecond
	rep := apply.Apply(context.Background(), cfg, mustPlan(t, f, cfg), o)
	if h := rep.Hosts[0]; h.Status != apply.Failed || !strings.Contains(h.Error, "did not come back") {
		t.Errorf("status %q (%s), want failed: the host never rebooted", h.Status, h.Error)
	}
}

// A host that only waits for its reboot is rebooted under the host lock:
// another apply in the middle of its steps (a dpkg run) must not have the
// machine restarted under it.
func TestRebootOnlyApplyTakesTheLock(t *testing.T) {
	t.Parallel()
	f := plantest.Start(t)
	ctx := context.Background()
	never := loadSpec(t, "node.gpuform.hcl", []string{stale}, "max_failures = 1", "max_failures = 1\n    reboot = \"never\"")
	if rep := apply.Apply(ctx, never, mustPlan(t, f, never), opts(f)); rep.Hosts[0].Status != apply.RebootPending {
		t.Fatalf("first apply: %+v", rep.Hosts[0])
	}
	allow := loadSpec(t, "node.gpuform.hcl", []string{stale}, "max_failures = 1", "max_failures = 1\n    reboot = \"allow\"")
	p := mustPlan(t, f, allow)
	if p.HasChanges() || !p.Hosts[0].RebootPending {
		t.Fatalf("want only a pending reboot, got changes=%v pending=%v", p.HasChanges(), p.Hosts[0].RebootPending)
	}
	tr, err := f.Connect(ctx, spec.Host{Name: stale})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	other, err := apply.AcquireLock(ctx, tr, "alice@ctl-2 pid 4242", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Release()
	before := len(f.Calls(stale))
	rep := apply.Apply(ctx, allow, p, opts(f))
	if h := rep.Hosts[0]; h.Status != apply.Failed || !strings.Contains(h.Error, "holds the lock") {
		t.Errorf("reboot under another apply's lock: %+v", h)
	}
	for _, c := range f.Calls(stale)[before:] {
		if strings.HasPrefix(c, "reboot") {
			t.Errorf("rebooted while another apply held the lock")
		}
	}
}
