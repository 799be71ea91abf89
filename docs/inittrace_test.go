package docs

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// initAllocation is one line of GODEBUG=inittrace=1: what a package's
// initialisation allocated.
type initAllocation struct {
	pkg   string
	bytes int
}

// parseInitTrace reads the runtime's inittrace lines, which look like
//
//	init github.com/gpuform/gpuform/spec @6.3 ms, 0.81 ms clock, 636504 bytes, 9471 allocs
func parseInitTrace(t *testing.T, trace []byte) []initAllocation {
	t.Helper()
	var out []initAllocation
	sc := bufio.NewScanner(bytes.NewReader(trace))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || f[0] != "init" {
			continue
		}
		n := -1
		for i := 2; i < len(f); i++ {
			if f[i] == "bytes," {
				v, err := strconv.Atoi(f[i-1])
				if err != nil {
					t.Fatalf("inittrace line %q: %v", sc.Text(), err)
				}
				n = v
			}
		}
		if n < 0 {
			t.Fatalf("inittrace line %q has no byte count", sc.Text())
		}
		out = append(out, initAllocation{pkg: f[1], bytes: n})
	}
	return out
}

// TestStartupInitAllocations guards what every command pays before main
// runs (issue 35): Go initialises every package linked into the binary, so a
// package-level regexp.MustCompile, table parse or map build costs
// `gpuform version` as much as `gpuform plan`. Such work belongs behind a
// sync.Once (internal/lazyre for regexps, Streams.KB for the knowledge
// base). The numbers are allocation counts the runtime reports, not times:
// before lazyre gpuform's own packages allocated 2.4 MB at init and the
// whole binary 3.5 MB; now about 7 kB and 0.9 MB, the rest mostly
// gonum/plot parsing its fonts, which no caller can defer.
func TestStartupInitAllocations(t *testing.T) {
	t.Parallel()
	bin := gpuformBinary(t)
	cmd := exec.Command(bin, "version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("gpuform version: %v\n%s", err, stderr.String())
	}
	const (
		ownBudget   = 64 << 10   // gpuform's own packages together
		totalBudget = 1536 << 10 // every package of the binary
	)
	var own, total int
	var sawMain bool
	for _, a := range parseInitTrace(t, stderr.Bytes()) {
		total += a.bytes
		if a.pkg == "main" || strings.HasPrefix(a.pkg, "github.com/gpuform/gpuform/") {
			sawMain = sawMain || a.pkg == "main"
			own += a.bytes
			if a.bytes > 16<<10 {
				t.Errorf("package %s allocates %d bytes at init: make that work lazy (sync.Once, internal/lazyre)", a.pkg, a.bytes)
			}
		}
	}
	if !sawMain {
		t.Fatalf("no inittrace line for package main in gpuform version's stderr:\n%s", stderr.String())
	}
	if own > ownBudget {
		t.Errorf("gpuform's own packages allocate %d bytes at init, budget %d", own, ownBudget)
	}
	if total > totalBudget {
		t.Errorf("the binary's packages allocate %d bytes at init, budget %d", total, totalBudget)
	}
	t.Logf("init allocations: gpuform's packages %d bytes, all packages %d bytes", own, total)
}
