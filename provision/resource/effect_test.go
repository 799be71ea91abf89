package resource

import (
	"slices"
	"testing"
)

// TestEffectDescriptions: a step's description shows the command its
// effect runs, as it read when the command was shell text built in Go,
// and the effect travels to apply_effect as its action and arguments.
func TestEffectDescriptions(t *testing.T) {
	for _, tc := range []struct {
		e    effect
		desc string
		call []string
	}{
		{updateGrub(), "update-grub", []string{"update-grub"}},
		{grubbyArgs("intel_iommu=on", "iommu=pt"), "grubby --update-kernel=ALL --remove-args=intel_iommu=on --args=iommu=pt", []string{"grubby", "intel_iommu=on", "iommu=pt"}},
		{grubbyArgs("iommu=pt intel_iommu=on", ""), "grubby --update-kernel=ALL --remove-args='iommu=pt intel_iommu=on'", []string{"grubby", "iommu=pt intel_iommu=on", ""}},
		{grubbyArgs("", "hugepages=16"), "grubby --update-kernel=ALL --args=hugepages=16", []string{"grubby", "", "hugepages=16"}},
		{tryRestart("slurmd.service"), "systemctl try-restart slurmd.service", []string{"try-restart", "slurmd.service"}},
		{daemonReload(), "systemctl daemon-reload", []string{"daemon-reload"}},
		{makeExecutable("/usr/local/sbin/gpuform-nic-irq"), `chmod 0755 "$R"/usr/local/sbin/gpuform-nic-irq`, []string{"make-executable", "/usr/local/sbin/gpuform-nic-irq"}},
		{unlinkAndReload("/etc/systemd/system/multi-user.target.wants/gpuform-nic-irq.service"),
			`rm -f "$R"/etc/systemd/system/multi-user.target.wants/gpuform-nic-irq.service && systemctl daemon-reload`,
			[]string{"unlink-and-reload", "/etc/systemd/system/multi-user.target.wants/gpuform-nic-irq.service"}},
		{createIMEXChannel("234"), "mknod -m 0666 /dev/nvidia-caps-imex-channels/channel0 c 234 0 (when missing)", []string{"create-imex-channel", "234"}},
	} {
		if got := tc.e.String(); got != tc.desc {
			t.Errorf("%v described as %q, want %q", tc.e, got, tc.desc)
		}
		if got := callOf(t, effectStep("", tc.e)); got.Name != "apply_effect.sh" || !slices.Equal(got.Args, tc.call) {
			t.Errorf("%v runs %s, want apply_effect.sh %q", tc.e, got, tc.call)
		}
	}
	if !(effect{}).none() || (effect{}).call() != nil {
		t.Error("the zero effect is not none")
	}
}
