package facts_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/internal/sshtest"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/resource"
	"github.com/gpuform/gpuform/provision/sim"
	"github.com/gpuform/gpuform/provision/transport"
)

// Payload budgets of one probe of the largest simulated node (the
// converged HGX H100: 224 CPUs, 8 GPUs, 12 RDMA NICs, every managed
// file), with a nonce as long as Probe's. Before the stream was
// compressed it was about 120 kB; compressed it is about a tenth of that.
// The plain stream (a node without gzip) is bounded too, so that neither
// grows unnoticed. Raise a budget only with a reason (a new declared read).
const (
	compressedBudget = 24 << 10
	plainBudget      = 160 << 10
)

// TestStreamCutsAtMaxOutput: stream.sh cuts the plain stream one byte
// past MaxOutput, which the parser then refuses; the two must agree.
func TestStreamCutsAtMaxOutput(t *testing.T) {
	t.Parallel()
	want := fmt.Sprintf("| { head -c %d 2>/dev/null || cat; } |", facts.MaxOutput+1)
	if !strings.Contains(facts.Script(resource.Reads()), want) {
		t.Errorf("the probe script does not cut its stream with %q", want)
	}
}

// TestStreamWithoutHeadC: on a node whose head has no -c (a busybox built
// without its fancy options) the stream goes compressed and uncut, and
// reads the same facts as where head cuts it.
func TestStreamWithoutHeadC(t *testing.T) {
	t.Parallel()
	root := compressedConverged(t)
	script := writeProbeFile(t, nil)
	realHead, err := exec.LookPath("head")
	if err != nil {
		t.Fatal(err)
	}
	// A head that refuses -c as busybox's does, and says it was asked.
	bin, asked := t.TempDir(), filepath.Join(t.TempDir(), "asked")
	fake := "#!/bin/sh\nfor a; do case $a in -c*) : >" + asked + "; echo \"head: invalid option -- 'c'\" >&2; exit 1 ;; esac; done\nexec " + realHead + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "head"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(path string) *facts.Node {
		t.Helper()
		n, out := runProbeFile(t, script, []string{"dash"}, "GPUFORM_ROOT="+root, "GPUFORM_PROBE_NONCE=hc1",
			"PATH="+path+filepath.Join(root, sim.BinDir)+":"+os.Getenv("PATH"))
		if !bytes.HasPrefix(out, []byte("@@gpuform-probe v1 gzip hc1\n")) {
			t.Fatalf("the stream is not compressed: starts %q", out[:min(len(out), 60)])
		}
		return n
	}
	if _, err := exec.LookPath("dash"); err != nil {
		sshtest.Missing(t, "dash is not installed")
	}
	want := run("")
	got := run(bin + ":")
	if _, err := os.Stat(asked); err != nil {
		t.Fatal("the probe never asked the head without -c")
	}
	if diff := cmp.Diff(string(marshal(t, want)), string(marshal(t, got))); diff != "" {
		t.Errorf("facts without head -c differ (-with +without):\n%s", diff)
	}
}

// TestProbePayloadBudget holds the probe's output per host to its budgets,
// and checks that the compressed and the plain stream say the same.
func TestProbePayloadBudget(t *testing.T) {
	t.Parallel()
	root := compressedConverged(t)
	nonce := strings.Repeat("n", 24) // Probe's nonce: 12 random bytes in hex
	run := func(env map[string]string) ([]byte, *facts.Node) {
		t.Helper()
		env["GPUFORM_PROBE_NONCE"] = nonce
		res, err := sim.New("sim://hgx-h100-converged", root).Run(context.Background(), transport.Command{Script: facts.Script(resource.Reads()), Env: env})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("probe: %v, exit %d: %s", err, res.ExitCode, res.Stderr)
		}
		n, err := facts.Parse(res.Stdout)
		if err != nil {
			t.Fatal(err)
		}
		return res.Stdout, n
	}
	compressed, cn := run(map[string]string{})
	plain, pn := run(map[string]string{"GPUFORM_PROBE_PLAIN": "1"})
	t.Logf("probe payload: %d bytes compressed, %d plain", len(compressed), len(plain))
	if want := "@@gpuform-probe v1 gzip " + nonce + "\n"; !bytes.HasPrefix(compressed, []byte(want)) {
		t.Fatalf("compressed stream starts %q, want %q", compressed[:min(len(compressed), 60)], want)
	}
	if len(compressed) > compressedBudget {
		t.Errorf("compressed probe output is %d bytes, over its budget of %d", len(compressed), compressedBudget)
	}
	if len(plain) > plainBudget {
		t.Errorf("plain probe output is %d bytes, over its budget of %d", len(plain), plainBudget)
	}
	if diff := cmp.Diff(string(marshal(t, pn)), string(marshal(t, cn))); diff != "" {
		t.Errorf("facts from the compressed stream differ from the plain one (-plain +compressed):\n%s", diff)
	}
}

// TestProbeConfigBytesRoundTrip is a property test of the byte-exact read:
// files of random bytes (NUL, 0xff, CR, no final newline, empty, larger
// than a pipe's buffer) come back from the probe exactly, each with its
// own mode, under dash, bash and busybox ash (whose ls has no -Z),
// compressed and plain, and under a root prefix whose path ls might quote
// (a space), where each file is listed alone rather than with the others.
func TestProbeConfigBytesRoundTrip(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(35, 1))
	contents := [][]byte{{}, {0}, []byte("no newline"), []byte("a\r\nb\r\n"), {0xff, 0xfe, '\n', 0}}
	for _, size := range []int{1, 2, 15, 16, 17, 255, 4096, 70000, 200000} {
		b := make([]byte, size)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		contents = append(contents, b)
	}
	modes := []os.FileMode{0o640, 0o600, 0o644, 0o604}
	for _, rootName := range []string{"root", "a root"} {
		root := filepath.Join(t.TempDir(), rootName)
		reads := facts.Reads{ConfigFiles: []string{"/etc/docker/daemon.json"}}
		want := map[string][]byte{}
		wantMode := map[string]string{}
		for i, c := range contents {
			p := fmt.Sprintf("/etc/roundtrip/f%02d.conf", i)
			full := filepath.Join(root, p)
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(full, c, 0o600); err != nil {
				t.Fatal(err)
			}
			// WriteFile's mode passes through the umask.
			mode := modes[i%len(modes)]
			if err := os.Chmod(full, mode); err != nil {
				t.Fatal(err)
			}
			reads.ConfigFiles = append(reads.ConfigFiles, p)
			want[p] = c
			wantMode[p] = mode.String()
		}
		script := writeProbeFile(t, &reads)
		shells := map[string][]string{"dash": {"dash"}, "bash-posix": {"bash", "--posix"}, "busybox-ash": {"busybox", "sh"}}
		for name, argv := range shells {
			for _, plain := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/plain=%v", rootName, name, plain), func(t *testing.T) {
					if _, err := exec.LookPath(argv[0]); err != nil {
						sshtest.Missing(t, argv[0]+" is not installed")
					}
					env := []string{"GPUFORM_ROOT=" + root, "GPUFORM_PROBE_NONCE=rt1"}
					if plain {
						env = append(env, "GPUFORM_PROBE_PLAIN=1")
					}
					n, out := runProbeFile(t, script, argv, env...)
					if got := bytes.HasPrefix(out, []byte("@@gpuform-probe v1 gzip ")); got == plain {
						t.Fatalf("compressed stream = %v, want %v", got, !plain)
					}
					for p, w := range want {
						cf, ok := n.ConfigFile(p)
						if !ok || !cf.Exists {
							t.Fatalf("%s: no config record", p)
						}
						if !bytes.Equal(cf.Data, w) {
							t.Errorf("%s: %d bytes came back, want the %d written (first difference at %d)", p, len(cf.Data), len(w), firstDiff(cf.Data, w))
						}
						if cf.Mode != wantMode[p] {
							t.Errorf("%s: mode %q, want %s", p, cf.Mode, wantMode[p])
						}
					}
				})
			}
		}
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// compressedConverged is the largest simulated node, the converged HGX
// H100, materialised for a probe whose stream is compressed (gzip must be
// installed).
func compressedConverged(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("gzip"); err != nil {
		sshtest.Missing(t, "gzip is not installed")
	}
	root, err := sim.Materialize("hgx-h100-converged", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return root
}
