package debroot

import (
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// forward makes 127.0.0.1:Port here reach sshd in the offline root's
// network namespace: each connection accepted here is dialled from a
// thread moved into that namespace (a socket stays in the namespace it
// was made in), and the bytes are copied both ways. It is the root's only
// link to anything; nothing in the root can open a connection out.
func (r *Root) forward(t testing.TB) {
	t.Helper()
	pid, err := r.initPID()
	if err != nil {
		t.Fatalf("debroot: %v", err)
	}
	nsPath := fmt.Sprintf("/proc/%d/ns/net", pid)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(r.Port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("debroot: listening for the offline root's sshd: %v", err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				s, err := dialIn(nsPath, addr)
				if err != nil {
					r.logMu.Lock()
					fmt.Fprintf(r.log, "debroot: forwarder: %v\n", err)
					r.logMu.Unlock()
					return
				}
				defer s.Close()
				done := make(chan struct{}, 2)
				go func() { _, _ = io.Copy(s, c); done <- struct{}{} }()
				go func() { _, _ = io.Copy(c, s); done <- struct{}{} }()
				<-done
			}()
		}
	}()
}

// dialIn dials addr from inside the network namespace at nsPath.
func dialIn(nsPath, addr string) (net.Conn, error) {
	ns, err := os.Open(nsPath)
	if err != nil {
		return nil, err
	}
	defer ns.Close()
	runtime.LockOSThread()
	own, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
	if err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	defer own.Close()
	if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("setns %s: %w", nsPath, err)
	}
	c, dialErr := net.Dial("tcp", addr)
	if err := unix.Setns(int(own.Fd()), unix.CLONE_NEWNET); err != nil {
		// The thread is left locked: it ends with its goroutine
		// instead of serving others in the wrong namespace.
		if c != nil {
			c.Close()
		}
		return nil, fmt.Errorf("setns back: %w", err)
	}
	runtime.UnlockOSThread()
	return c, dialErr
}

// Routes returns the routes of the root's network namespace through any
// interface but loopback (/proc/PID/net/route and ipv6_route), and its
// interfaces: an offline root has none but "lo", and no route at all.
func (r *Root) Routes(t testing.TB) (routes, interfaces []string) {
	t.Helper()
	pid, err := r.initPID()
	if err != nil {
		t.Fatalf("debroot: %v", err)
	}
	read := func(name string) []string {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, name))
		if err != nil {
			t.Fatalf("debroot: %v", err)
		}
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
	for i, l := range read("route") {
		if f := strings.Fields(l); i > 0 && len(f) > 0 && f[0] != "lo" {
			routes = append(routes, l)
		}
	}
	for _, l := range read("ipv6_route") {
		if f := strings.Fields(l); len(f) == 10 && f[9] != "lo" {
			routes = append(routes, l)
		}
	}
	for i, l := range read("dev") {
		if name, _, ok := strings.Cut(l, ":"); ok && i > 1 {
			interfaces = append(interfaces, strings.TrimSpace(name))
		}
	}
	return routes, interfaces
}
