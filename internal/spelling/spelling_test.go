package spelling

import "testing"

func TestBusID(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"0000:c3:00.0", "00000000:C3:00.0"},       // sysfs, lspci -D
		{"00000000:C3:00.0", "00000000:C3:00.0"},   // NVML, nvidia-smi
		{"00000000:c3:00.0", "00000000:C3:00.0"},   // nvidia-smi -q -x lower case
		{"c3:00.0", "00000000:C3:00.0"},            // lspci
		{"PCI:0000:9d:00", "00000000:9D:00.0"},     // the kernel's Xid line
		{"0000:9d:00", "00000000:9D:00.0"},         // SXid without PCI:
		{"0001:1b:00.1", "00000001:1B:00.1"},       // another domain, a function
		{" 0000:18:00.0 ", "00000000:18:00.0"},     // surrounding space
		{"mlx5_0", "mlx5_0"},                       // not an address: kept
		{"0000:c3:20.0", "0000:c3:20.0"},           // device above 0x1f
		{"0000:c3:00.8", "0000:c3:00.8"},           // function above 7
		{"", ""},                                   // nothing
		{"000000000:c3:00.0", "000000000:c3:00.0"}, // 9-digit domain
	} {
		if got := BusID(tc.in); got != tc.want {
			t.Errorf("BusID(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if got, want := IsBusID(tc.in), tc.in != tc.want || tc.in == "00000000:C3:00.0"; got != want {
			t.Errorf("IsBusID(%q) = %v, want %v", tc.in, got, want)
		}
	}
}

func TestBytes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   uint64
		want string
	}{
		{0, "0B"},
		{1000, "1000B"},
		{1024, "1KiB"},
		{65536 << 10, "64MiB"},
		{67108864, "64MiB"},
		{16 << 30, "16GiB"},
		{2 << 40, "2TiB"},
		{1536 << 20, "1536MiB"},
	} {
		if got := Bytes(tc.in); got != tc.want {
			t.Errorf("Bytes(%d) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestSize(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		unit uint64
		want string
		ok   bool
	}{
		{"65536", 1 << 10, "64MiB", true}, // limits.conf stack, KiB
		{"67108864", 1, "64MiB", true},    // daemon.json default-ulimits, bytes
		{"16G", 0, "16GiB", true},         // Docker's default-shm-size
		{"64m", 0, "64MiB", true},         //
		{"1073741824", 0, "1GiB", true},   // Docker's plain bytes
		{"unlimited", 1 << 10, "unlimited", true},
		{"-1", 1, "unlimited", true},
		{"infinity", 1, "unlimited", true},
		{"8192", 1 << 10, "8MiB", true},
		{"lots", 1, "", false},
		{"64x", 0, "", false},
		{"18446744073709551615", 1 << 10, "", false}, // overflows
	} {
		got, ok := Size(tc.in, tc.unit)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Size(%q, %d) = %q, %v; want %q, %v", tc.in, tc.unit, got, ok, tc.want, tc.ok)
		}
	}
}

func TestHosts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{[]string{"gpu001", "gpu002", "gpu003", "gpu007"}, "gpu[001-003,007]"},
		{[]string{"sim://hgx-h100-stale/gpu01", "sim://hgx-h100-stale/gpu02"}, "sim://hgx-h100-stale/gpu[01-02]"},
		{[]string{"sim://hgx-h100-stale", "sim://hgx-h100-converged"}, "sim://hgx-h100-stale, sim://hgx-h100-converged"},
	} {
		if got := Hosts(tc.in); got != tc.want {
			t.Errorf("Hosts(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
