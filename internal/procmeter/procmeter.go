// Package procmeter measures what this process itself costs over a stretch
// of work: its own CPU time (user + system, getrusage RUSAGE_SELF, so the
// shells and sshds it talks to are not counted), the CPU time of the child
// processes it waited for (a simulated node's probe shells), its peak
// resident set (VmHWM, reset at Start) and peak live heap, and what it
// allocated. Benchmarks use it to report what gpuform costs per host
// apart from the fleet it drives, which on a shared machine matters more
// than wall time.
package procmeter

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Meter is one measurement, from Start to Stop.
type Meter struct {
	t0               time.Time
	self0, children0 time.Duration
	mallocs0, bytes0 uint64
	peakHeap         atomic.Uint64
	stop             chan struct{}
	wg               sync.WaitGroup
	rssReset         bool
}

// Result is what a Meter measured.
type Result struct {
	// Wall is the elapsed time.
	Wall time.Duration
	// CPU is this process's own user + system time.
	CPU time.Duration
	// ChildCPU is the user + system time of the child processes this
	// process waited for meanwhile (local and simulated transports).
	ChildCPU time.Duration
	// PeakRSS is the largest resident set in bytes (VmHWM); when it could
	// not be reset at Start (not Linux, or no /proc/self/clear_refs) it is
	// the process's peak since it started.
	PeakRSS uint64
	// PeakRSSReset says whether PeakRSS covers only the measured stretch.
	PeakRSSReset bool
	// PeakHeap is the largest live heap sampled (every 20 ms: a finer
	// tick would wake the scheduler often enough to show in CPU).
	PeakHeap uint64
	// Allocs and AllocBytes are the heap allocations made.
	Allocs, AllocBytes uint64
}

// Start collects garbage, returns freed memory to the system, resets the
// peak resident set and starts measuring.
func Start() *Meter {
	runtime.GC()
	debug.FreeOSMemory()
	m := &Meter{stop: make(chan struct{})}
	// "5" resets VmHWM to the current RSS (proc(5), clear_refs).
	m.rssReset = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m.mallocs0, m.bytes0 = ms.Mallocs, ms.TotalAlloc
	m.self0, m.children0 = cpuTimes()
	m.wg.Add(1)
	go m.sampleHeap()
	m.t0 = time.Now()
	return m
}

func (m *Meter) sampleHeap() {
	defer m.wg.Done()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		metrics.Read(sample)
		if v := sample[0].Value.Uint64(); v > m.peakHeap.Load() {
			m.peakHeap.Store(v)
		}
		select {
		case <-m.stop:
			return
		case <-tick.C:
		}
	}
}

// Stop ends the measurement.
func (m *Meter) Stop() Result {
	wall := time.Since(m.t0)
	self, children := cpuTimes()
	close(m.stop)
	m.wg.Wait()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return Result{
		Wall:         wall,
		CPU:          self - m.self0,
		ChildCPU:     children - m.children0,
		PeakRSS:      peakRSS(),
		PeakRSSReset: m.rssReset,
		PeakHeap:     m.peakHeap.Load(),
		Allocs:       ms.Mallocs - m.mallocs0,
		AllocBytes:   ms.TotalAlloc - m.bytes0,
	}
}

// ReportPerHost reports r on b for units units of work (b.N passes over
// hosts hosts): ns/host, controller CPU ms/host, child CPU ms/host,
// bytes/host and allocs/host, and the peaks in MB.
func (r Result) ReportPerHost(b *testing.B, hosts int) {
	n := float64(b.N * hosts)
	b.ReportMetric(float64(r.Wall.Nanoseconds())/n, "ns/host")
	b.ReportMetric(float64(r.CPU.Microseconds())/1000/n, "cpu-ms/host")
	b.ReportMetric(float64(r.ChildCPU.Microseconds())/1000/n, "child-cpu-ms/host")
	b.ReportMetric(float64(r.AllocBytes)/n, "bytes/host")
	b.ReportMetric(float64(r.Allocs)/n, "allocs/host")
	b.ReportMetric(float64(r.PeakRSS)/1e6, "peak-rss-MB")
	b.ReportMetric(float64(r.PeakHeap)/1e6, "peak-heap-MB")
}

func cpuTimes() (self, children time.Duration) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru) == nil {
		children = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return self, children
}

// peakRSS is VmHWM from /proc/self/status in bytes; 0 where there is none.
func peakRSS() uint64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return n * 1024
		}
	}
	return 0
}
