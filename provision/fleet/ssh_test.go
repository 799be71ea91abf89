package fleet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuform/gpuform/internal/sshtest"
	"github.com/gpuform/gpuform/provision/ssh"
	"github.com/gpuform/gpuform/provision/transport"
)

// fleetOptions dials any host of fl with nothing from the machine running
// the tests: no agent, HOME or USER.
func fleetOptions(fl *sshtest.Fleet) ssh.Options {
	return ssh.Options{
		SSHConfigPath:   fl.ConfigFile,
		KnownHostsFiles: []string{fl.KnownHostsFile},
		Getenv:          func(string) string { return "" },
	}
}

// perHost connects to host, calls do with the open transport, and closes
// it: what probe, plan and apply do for each host of a fleet. One Dialer
// serves every host, as in the CLI.
func perHost(tb testing.TB, opts ssh.Options, do func(ctx context.Context, t transport.Transport) error) Func {
	tb.Helper()
	d, err := ssh.NewDialer(opts)
	if err != nil {
		tb.Fatal(err)
	}
	return func(ctx context.Context, host string) error {
		c, err := d.Dial(ctx, host)
		if err != nil {
			return err
		}
		defer c.Close()
		return do(ctx, c)
	}
}

// runTrue runs `true` once and treats a non-zero exit as a failure.
func runTrue(ctx context.Context, t transport.Transport) error {
	res, err := t.Run(ctx, transport.Command{Script: "true"})
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("true exited %d: %s", res.ExitCode, res.Stderr)
	}
	return nil
}

func TestFleetOverSSH(t *testing.T) {
	fl := sshtest.StartFleet(t, 2, 6, sshtest.Options{})

	// A port nothing listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := l.Addr().(*net.TCPAddr).Port
	l.Close()
	fl.AddHost("node-refused", refused)

	// A host whose key is in no known_hosts file.
	stranger := sshtest.Start(t, sshtest.Options{UserKey: fl.Servers[0].UserKey})
	fl.AddHost("node-stranger", stranger.Port)

	// A host that accepts connections and never answers.
	hang, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hang.Close()
	go func() {
		for {
			c, err := hang.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); time.Sleep(2 * time.Second) }()
		}
	}()
	// Its own connect timeout, from ssh_config; the others keep the
	// default, so a loaded test machine does not time them out.
	fl.AddHost("node-hung", hang.Addr().(*net.TCPAddr).Port, "ConnectTimeout 1")

	// A host that runs the command and reports failure.
	fl.AddHost("node-exit", fl.Servers[1].Port)

	opts := fleetOptions(fl)
	hosts := append(append([]string{}, fl.Hosts...), "node-refused", "node-stranger", "node-hung", "node-exit")
	var out strings.Builder
	var outMu sync.Mutex
	results := Run(context.Background(), hosts, 4, perHost(t, opts, func(ctx context.Context, tr transport.Transport) error {
		if tr.Host() == "node-exit" {
			res, err := tr.Run(ctx, transport.Command{Script: "exit 7"})
			if err != nil {
				return err
			}
			return fmt.Errorf("exit status %d", res.ExitCode)
		}
		return runTrue(ctx, tr)
	}), NewLines(&lockedWriter{w: &out, mu: &outMu}, "probing"))

	wantOp := map[string]string{"node-refused": "connect", "node-stranger": "host key", "node-hung": "timeout"}
	for _, h := range hosts {
		err, ok := results[h]
		if !ok {
			t.Errorf("%s: no result", h)
			continue
		}
		switch op, bad := wantOp[h]; {
		case bad:
			var he *transport.HostError
			if !errors.As(err, &he) || he.Op != op || he.Host != h {
				t.Errorf("%s: %v, want a %q HostError", h, err, op)
			}
		case h == "node-exit":
			if err == nil || !strings.Contains(err.Error(), "exit status 7") {
				t.Errorf("%s: %v", h, err)
			}
		case err != nil:
			t.Errorf("%s: %v", h, err)
		}
	}
	summary := "probing: 6 of 10 hosts ok, 4 failed"
	if !strings.Contains(out.String(), summary) {
		t.Errorf("progress output lacks %q:\n%s", summary, out.String())
	}
}

type lockedWriter struct {
	w  *strings.Builder
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// BenchmarkFleetTrue50 connects to 50 hosts (50 connections spread over 4
// local sshds) with parallelism 32 and runs `true` once on each: the
// baseline that the facts probe's fleet cost is compared with.
func BenchmarkFleetTrue50(b *testing.B) {
	benchmarkFleet(b, 50, DefaultParallelism, runTrue)
}

// benchmarkFleet measures one fleet pass per iteration: dial every host,
// run perHost on its transport, close. Besides ns/op it reports
// peak-heap-bytes (live heap sampled during the loop), peak-rss-kB (the
// process's VmHWM, setup included) and sessions/host and logins/host as
// counted in the sshd logs, so that "one exec per host" is checked, not
// assumed. A benchmark for another per-host command (the facts probe)
// calls it with its own perHost.
func benchmarkFleet(b *testing.B, n, parallelism int, perHost func(ctx context.Context, t transport.Transport) error) {
	fl := sshtest.StartFleet(b, 4, n, sshtest.Options{})
	fn := perHostFunc(b, fleetOptions(fl), perHost)

	// One untimed pass warms the servers and checks that every host works.
	for h, err := range Run(context.Background(), fl.Hosts, parallelism, fn, nil) {
		if err != nil {
			b.Fatalf("%s: %v", h, err)
		}
	}
	logins0, sessions0 := fl.Logins(), fl.Sessions()

	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(sample)
			if v := sample[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()

	runtime.GC()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for h, err := range Run(context.Background(), fl.Hosts, parallelism, fn, nil) {
			if err != nil {
				b.Fatalf("%s: %v", h, err)
			}
		}
	}
	b.StopTimer()
	close(stop)
	<-sampled

	// sshd logs a session a moment after it starts; wait for the count.
	want := sessions0 + b.N*n
	deadline := time.Now().Add(5 * time.Second)
	logins, sessions := 0, 0
	for {
		logins, sessions = fl.Logins(), fl.Sessions()
		if sessions >= want || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.ReportMetric(float64(peak.Load()), "peak-heap-bytes")
	b.ReportMetric(float64(peakRSSkB()), "peak-rss-kB")
	b.ReportMetric(float64(sessions-sessions0)/float64(b.N*n), "sessions/host")
	b.ReportMetric(float64(logins-logins0)/float64(b.N*n), "logins/host")
}

func perHostFunc(tb testing.TB, opts ssh.Options, do func(ctx context.Context, t transport.Transport) error) Func {
	return perHost(tb, opts, do)
}

// peakRSSkB reads the process's peak resident set size (VmHWM) on Linux; 0
// elsewhere.
func peakRSSkB() int {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			return n
		}
	}
	return 0
}
