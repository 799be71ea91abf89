package apply_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/provision/apply"
	"github.com/gpuform/gpuform/provision/plan"
	"github.com/gpuform/gpuform/provision/plan/plantest"
	"github.com/gpuform/gpuform/provision/resource"
	"github.com/gpuform/gpuform/provision/sim"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/transport"
	"github.com/gpuform/gpuform/spec"
)

// TestRolloutInNVLinkDomains applies a sysctl to two racks of two
// simulated GB200 trays, one NVLink domain each, one domain per batch
// and no domain allowed to fail: a tray of rack 1 fails its step, so
// rack 1 is changed whole (its other trays in the same batch) and rack 2
// not at all, the budget counted in domains. The trays are
// reached through the sim transport directly (plan's and apply's domain
// logic is judged, not SSH, which the other apply tests use); provision/
// plan's domain tests plan full racks of 18; a rack of two keeps the
// materialised roots (the suite's cost) few.
func TestRolloutInNVLinkDomains(t *testing.T) {
	t.Parallel()
	var racks [][]string
	var all []string
	for r := 1; r <= 2; r++ {
		var rack []string
		for i := 1; i <= 2; i++ {
			rack = append(rack, fmt.Sprintf("sim://gb200-nvl72-tray/r%d-t%02d", r, i))
		}
		racks = append(racks, rack)
		all = append(all, rack...)
	}
	quote := func(hs []string) string { return `["` + strings.Join(hs, `", "`) + `"]` }
	src := fmt.Sprintf(`
node "racks" {
  hosts  = %s
  sysctl = { "vm.swappiness" = "1" }
  nvlink_domain "rack1" { hosts = %s }
  nvlink_domain "rack2" { hosts = %s }
  rollout {
    unit         = "nvlink_domain"
    batch        = 1
    max_failures = 0
  }
}
`, quote(all), quote(racks[0]), quote(racks[1]))
	cfg := plantest.LoadSpec(t, map[string]string{"racks.gpuform.hcl": src})
	state := t.TempDir()
	roots := map[string]string{}
	for _, h := range all {
		root, err := sim.MaterializeHost(h, state)
		if err != nil {
			t.Fatal(err)
		}
		roots[h] = root
	}
	failing := racks[0][1]
	if err := os.MkdirAll(filepath.Join(roots[failing], "var/lib/gpuform-sim/fail"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(roots[failing], "var/lib/gpuform-sim/fail/sysctl"), []byte("sysctl: permission denied on key vm.swappiness"), 0o644); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	connect := func(_ context.Context, h spec.Host) (transport.Transport, error) {
		mu.Lock()
		defer mu.Unlock()
		return sim.New(h.Name, roots[h.Name]), nil
	}
	hosts, diags := target.Select(cfg, nil)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	o := target.Options{Connect: connect}
	p, err := plan.Run(context.Background(), testKB, hosts, o)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Applyable {
		t.Fatalf("plan not applyable: %+v", p.Hosts[0].Error)
	}
	rep := apply.Apply(context.Background(), cfg, p, apply.Options{KB: testKB, Target: o, Owner: "test@ctl pid 1", RebootPoll: time.Millisecond, RebootTimeout: time.Minute})
	type result struct {
		Status apply.Status
		Batch  int
	}
	want := map[string]result{}
	got := map[string]result{}
	for r, rack := range racks {
		for _, h := range rack {
			switch {
			case h == failing:
				want[h] = result{apply.Failed, 1}
			case r == 0:
				want[h] = result{apply.Succeeded, 1}
			default:
				want[h] = result{apply.Skipped, r + 1}
			}
		}
	}
	for _, h := range rep.Hosts {
		got[h.Host] = result{h.Status, h.Batch}
		if h.Status == apply.Skipped && !strings.Contains(h.Error, `node "racks" exceeded its failure budget (1 NVLink domains failed, max_failures = 0)`) {
			t.Errorf("%s: error %q", h.Host, h.Error)
		}
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("host results (-want +got):\n%s", d)
	}
	if want := `node "racks": 1 NVLink domains failed, more than max_failures = 0; batch 2 and later were not started`; rep.Stopped != want {
		t.Errorf("Stopped = %q, want %q", rep.Stopped, want)
	}
	for _, h := range racks[1] {
		if b, err := os.ReadFile(filepath.Join(roots[h], "var/log/gpuform-sim/calls.log")); err == nil && len(b) > 0 {
			t.Errorf("%s of an unstarted domain was touched: %s", h, b)
		}
	}
}

// TestIMEXApplied converges a rack of two simulated GB200 trays with
// imex = true: nvidia-imex held at the driver's release and running,
// nodes_config.cfg holding the domain's trays, the channel device's
// tmpfiles line with the major the tray's /proc/devices gives, and the
// channel device created at once without a reboot (mknod with that major)
// on the tray that lacks it, left alone on the tray that has one; a
// second plan changes nothing.
func TestIMEXApplied(t *testing.T) {
	t.Parallel()
	rack := []string{"sim://gb200-nvl72-tray/r1-t01", "sim://gb200-nvl72-tray/r1-t02"}
	cfg := plantest.LoadSpec(t, map[string]string{"rack.gpuform.hcl": `
node "rack1" {
  hosts = ["sim://gb200-nvl72-tray/r1-t[01-02]"]
  driver {
    version       = "580.159.03"
    kernel_module = "open"
    imex          = true
  }
  nvlink_domain "rack1" {}
}
`})
	state := t.TempDir()
	roots := map[string]string{}
	for _, h := range rack {
		root, err := sim.MaterializeHost(h, state)
		if err != nil {
			t.Fatal(err)
		}
		roots[h] = root
	}
	// r1-t02 already has the channel (created by hand before gpuform).
	if err := os.WriteFile(filepath.Join(roots[rack[1]], "dev/nvidia-caps-imex-channels/channel0"), []byte("by hand\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	o := target.Options{Connect: func(_ context.Context, h spec.Host) (transport.Transport, error) {
		return sim.New(h.Name, roots[h.Name]), nil
	}}
	hosts, diags := target.Select(cfg, nil)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	p, err := plan.Run(context.Background(), testKB, hosts, o)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Applyable {
		t.Fatalf("plan not applyable: %q", p.Hosts[0].Error)
	}
	var changed []string
	for _, rc := range p.Hosts[0].ResourceChanges {
		if rc.Action != resource.NoOp {
			changed = append(changed, rc.Resource+" "+rc.Action.String())
		}
	}
	// The tray's driver and IMEX packages are installed but not held.
	if d := cmp.Diff([]string{"driver_package update", "imex_package update", "imex_peers update", "imex_channel create"}, changed); d != "" {
		t.Errorf("changes (-want +got):\n%s", d)
	}
	rep := apply.Apply(context.Background(), cfg, p, apply.Options{KB: testKB, Target: o, Owner: "test@ctl pid 1", RebootPoll: time.Millisecond, RebootTimeout: time.Minute})
	if !rep.Converged() {
		t.Fatalf("not converged: %+v", rep.Hosts)
	}
	read := func(h, path string) string {
		b, err := os.ReadFile(filepath.Join(roots[h], path))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, h := range rack {
		if got := read(h, "etc/nvidia-imex/nodes_config.cfg"); got != "r1-t01\nr1-t02\n" {
			t.Errorf("%s: nodes_config.cfg = %q", h, got)
		}
		ch := read(h, "etc/tmpfiles.d/90-gpuform-imex-channels.conf")
		if !strings.Contains(ch, "\nc /dev/nvidia-caps-imex-channels/channel0 0666 root root - 234:0\n") {
			t.Errorf("%s: channel file %q", h, ch)
		}
		calls := read(h, "var/log/gpuform-sim/calls.log")
		for _, want := range []string{"apt-mark hold nvidia-imex-580", "systemctl try-restart nvidia-imex.service"} {
			if !strings.Contains(calls, want) {
				t.Errorf("%s: no %q in calls:\n%s", h, want, calls)
			}
		}
		wantDev, wantMknod := "c 234:0\n", true
		if h == rack[1] {
			wantDev, wantMknod = "by hand\n", false
		}
		if got := read(h, "dev/nvidia-caps-imex-channels/channel0"); got != wantDev {
			t.Errorf("%s: channel0 = %q, want %q", h, got, wantDev)
		}
		if got := strings.Contains(calls, "mknod -m 0666 "+roots[h]+"/dev/nvidia-caps-imex-channels/channel0 c 234 0"); got != wantMknod {
			t.Errorf("%s: mknod called %v, want %v; calls:\n%s", h, got, wantMknod, calls)
		}
	}
	again, err := plan.Run(context.Background(), testKB, hosts, o)
	if err != nil {
		t.Fatal(err)
	}
	if again.HasChanges() {
		t.Errorf("second plan has changes: %+v", again.Hosts[0].ResourceChanges)
	}
}
