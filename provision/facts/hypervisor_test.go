package facts

import "testing"

func TestParseHypervisor(t *testing.T) {
	dmi := func(vendor, product string) []string {
		return []string{file("/sys/class/dmi/id/sys_vendor", vendor), file("/sys/class/dmi/id/product_name", product)}
	}
	detect := func(rc, out string) []string {
		return []string{"@@n1 cmd detect-virt " + rc + "\n" + out + "\n@@n1 eof\n"}
	}
	tests := map[string]struct {
		records []string
		want    string
	}{
		"systemd-detect-virt names it": {detect("0", "microsoft"), "microsoft"},
		// "none" exits 1: bare metal, whatever DMI says.
		"systemd-detect-virt says none": {append(detect("1", "none"), dmi("QEMU", "Standard PC")...), ""},
		"azure by dmi":                  {dmi("Microsoft Corporation", "Virtual Machine"), "dmi:Microsoft Hyper-V"},
		"kvm by dmi":                    {dmi("QEMU", "Standard PC (Q35 + ICH9, 2009)"), "dmi:QEMU"},
		"ec2 instance":                  {dmi("Amazon EC2", "p5.48xlarge"), "dmi:Amazon EC2"},
		// An EC2 bare-metal instance is no VM.
		"ec2 metal":        {dmi("Amazon EC2", "p4d.metal"), ""},
		"server vendor":    {dmi("Supermicro", "SYS-821GE-TNHR"), ""},
		"nothing readable": {nil, ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := parseOne(t, tc.records...).Hypervisor; got != tc.want {
				t.Errorf("Hypervisor = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestParseCPUVendor(t *testing.T) {
	n := parseOne(t, file("/proc/cpuinfo", "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\nmodel name\t: Intel(R) Xeon(R) Platinum 8480C\n"))
	if n.CPU.Vendor != "GenuineIntel" || n.CPU.Family != 6 || n.CPU.ModelID != 143 || n.CPU.Model != "Intel(R) Xeon(R) Platinum 8480C" {
		t.Errorf("CPU = %+v", n.CPU)
	}
}
