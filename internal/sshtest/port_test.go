package sshtest

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

func TestReservablePorts(t *testing.T) {
	for _, tc := range []struct {
		ephemeral string
		lo, hi    int
		ok        bool
	}{
		{"32768\t60999\n", 10000, 32768, true}, // Linux's default
		{"1024 65535", 0, 0, false},            // nothing left on either side
		{"10500 60000", 60001, 65536, true},    // too few below, enough above
		{"12000 63000", 0, 0, false},           // 2,000 below, 2,535 above
		{"", 0, 0, false},
		{"32768", 0, 0, false},
		{"a b", 0, 0, false},
	} {
		lo, hi, ok := reservablePorts(tc.ephemeral)
		if lo != tc.lo || hi != tc.hi || ok != tc.ok {
			t.Errorf("reservablePorts(%q) = %d, %d, %v; want %d, %d, %v", tc.ephemeral, lo, hi, ok, tc.lo, tc.hi, tc.ok)
		}
	}
}

// TestFreePortHeld: the port is outside the ephemeral range, bindable, and
// locked against every other caller until the test that took it ends.
func TestFreePortHeld(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		Missing(t, "no /proc/sys/net/ipv4/ip_local_port_range: FreePort falls back to the kernel's port 0")
	}
	lo, hi, ok := reservablePorts(string(b))
	if !ok {
		Missing(t, "ephemeral range "+strconv.Quote(string(b))+" leaves no range to set aside")
	}
	var port int
	locked := func() bool {
		f, err := os.Open(filepath.Join(portLockDir(), strconv.Itoa(port)))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			return true
		}
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return false
	}
	t.Run("take", func(t *testing.T) {
		port = FreePort(t)
		if port < lo || port >= hi {
			t.Fatalf("port %d outside [%d, %d)", port, lo, hi)
		}
		if !locked() {
			t.Fatalf("port %d is not locked while its test runs", port)
		}
		l, err := net.Listen("tcp4", "0.0.0.0:"+strconv.Itoa(port))
		if err != nil {
			t.Fatalf("the port handed out cannot be bound: %v", err)
		}
		defer l.Close()
		for range 50 {
			if p := FreePort(t); p == port {
				t.Fatalf("port %d handed out twice", port)
			}
		}
	})
	if locked() {
		t.Fatalf("port %d still locked after its test ended", port)
	}
}
