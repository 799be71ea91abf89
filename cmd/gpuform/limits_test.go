package main

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// writeSpec writes name → source under dir, creating directories.
func writeSpec(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, src := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, p, src)
	}
}

// doublingSpec is 40 locals, each twice the one before: 1.4 KB of spec
// that asks for a 16 TiB string.
func doublingSpec() string {
	var b strings.Builder
	b.WriteString("locals {\n  a0 = \"xxxxxxxxxxxxxxxx\"\n")
	for i := 1; i <= 40; i++ {
		fmt.Fprintf(&b, "  a%d = \"${local.a%d}${local.a%d}\"\n", i, i-1, i-1)
	}
	b.WriteString("}\n\noutput \"n\" {\n  value = length(local.a40)\n}\n")
	return b.String()
}

// fanOutModules is 7 files: the root calls m1 eight times, each mN calls
// m(N+1) eight times, down to m6: 8^6 module instances.
func fanOutModules() map[string]string {
	files := map[string]string{}
	call := func(next string) string {
		var b strings.Builder
		for i := 0; i < 8; i++ {
			fmt.Fprintf(&b, "module \"c%d\" {\n  source = \"../%s\"\n}\n", i, next)
		}
		return b.String()
	}
	files["root/main.gpuform.hcl"] = call("m1")
	for i := 1; i < 6; i++ {
		files[fmt.Sprintf("m%d/main.gpuform.hcl", i)] = call(fmt.Sprintf("m%d", i+1))
	}
	files["m6/main.gpuform.hcl"] = "output \"x\" {\n  value = 1\n}\n"
	return files
}

// TestBoundedWork runs validate on the small inputs that used to exhaust the
// machine: each must end with exit 1 and the limit's diagnostic, promptly
// and in bounded memory, instead of running out of memory, overflowing the
// stack or running for minutes.
func TestBoundedWork(t *testing.T) {
	random := make([]byte, 1<<20)
	rand.New(rand.NewSource(17)).Read(random)
	cases := []struct {
		name  string
		files map[string]string
		dir   string // the spec directory under the temp dir
		args  []string
		links map[string]string // link name → target
		want  []string          // substrings of stderr
	}{{
		name:  "40 locals each doubling a string",
		files: map[string]string{"main.gpuform.hcl": doublingSpec()},
		want:  []string{"Error: Value too large", "line 19", "exceeds the limit of 1 MiB"},
	}, {
		name:  "setproduct of three ranges of 1000",
		files: map[string]string{"main.gpuform.hcl": "locals {\n  n = length(setproduct(range(1000), range(1000), range(1000)))\n}\n"},
		want:  []string{"Error: Value too large", "line 2", "exceeds the limit of 100000"},
	}, {
		name:  "module fan-out 8 at depth 6",
		files: fanOutModules(),
		dir:   "root",
		want:  []string{"Error: Too many module instances", "exceeds the limit of 1000"},
	}, {
		name:  "300 KB of unary operators",
		files: map[string]string{"main.gpuform.hcl": "locals {\n  a = " + strings.Repeat("!", 300_000) + "true\n}\n"},
		want:  []string{"Error: Nesting too deep", "exceeds the limit of 10000"},
	}, {
		name:  "nested for expressions",
		files: map[string]string{"main.gpuform.hcl": "locals {\n  a = [for x in range(1000) : [for y in range(1000) : [for z in range(1000) : 1]]]\n}\n"},
		want:  []string{"Error: Too many iterations", "exceeds the limit of 100000"},
	}, {
		name:  "var-file /dev/zero",
		files: map[string]string{"main.gpuform.hcl": "variable \"x\" {\n  default = 1\n}\n"},
		args:  []string{"-var-file", "/dev/zero"},
		want:  []string{"Error: Cannot read variables file", "/dev/zero exceeds the limit of 4 MiB"},
	}, {
		name:  "spec file linked to /dev/zero",
		files: map[string]string{"main.gpuform.hcl": "variable \"x\" {\n  default = 1\n}\n"},
		// Refused as a link out of the spec's directory before it is
		// opened; a device inside it is refused as not a regular file
		// (TestFIFOInSpecDir).
		links: map[string]string{"zero.gpuform.hcl": "/dev/zero"},
		want:  []string{"Error: Cannot read spec file", "is a symbolic link to /dev/zero, outside its directory"},
	}, {
		name:  "spec file over the size limit",
		files: map[string]string{"main.gpuform.hcl": "# " + strings.Repeat("x", 5<<20) + "\n"},
		want:  []string{"Error: Cannot read spec file", "exceeds the limit of 4 MiB"},
	}, {
		name:  "1 MB of random bytes",
		files: map[string]string{"main.gpuform.hcl": string(random)},
		want:  []string{"Error: "},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			writeSpec(t, root, tc.files)
			for name, target := range tc.links {
				if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
					t.Fatal(err)
				}
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			args := append(append([]string{"validate"}, tc.args...), filepath.Join(root, tc.dir))
			code, _, errOut := runCLI(t, "", args...)
			runtime.ReadMemStats(&after)
			if code != ExitFailed {
				t.Errorf("exit %d, want %d", code, ExitFailed)
			}
			// Details are word-wrapped; compare with spaces normalised.
			flat := strings.Join(strings.Fields(errOut), " ")
			for _, w := range tc.want {
				if !strings.Contains(flat, w) {
					t.Errorf("stderr lacks %q:\n%.2000s", w, errOut)
				}
			}
			// Allocation, not just the live heap: a limit hit only after
			// building the huge value would pass a heap check.
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<30 {
				t.Errorf("validate allocated %d MiB, want under 1 GiB", alloc>>20)
			}
		})
	}
}

// TestFIFOInSpecDir: a spec directory from a pull request may hold a FIFO
// where a spec, lock or lint file is read. Opening a FIFO blocks until
// someone writes to it, and the check that refuses files that are not
// regular came only after the open, so validate, lint, plan and fmt in CI
// hung until the job's time ran out. Each must refuse it at once.
func TestFIFOInSpecDir(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"evil.gpuform.hcl", "x.auto.gpuvars.hcl", ".gpuform.lock.hcl", ".gpuform-lint.hcl"} {
		for _, cmd := range []string{"validate", "lint", "plan", "fmt"} {
			t.Run(name+"/"+cmd, func(t *testing.T) {
				dir := t.TempDir()
				writeSpec(t, dir, map[string]string{"main.gpuform.hcl": "node \"n\" {\n  hosts = [\"sim://hgx-h100-stale\"]\n}\n"})
				if err := syscall.Mkfifo(filepath.Join(dir, name), 0o644); err != nil {
					t.Fatal(err)
				}
				type result struct {
					code     int
					out, err string
				}
				done := make(chan result, 1)
				go func() {
					code, out, errOut := runPA(t, []string{"GPUFORM_SIM_STATE=" + t.TempDir()}, "", cmd, dir)
					done <- result{code, out, errOut}
				}()
				select {
				case r := <-done:
					// fmt lists only *.gpuform.hcl files; for the others it
					// has nothing to refuse and must simply not hang.
					if name != "evil.gpuform.hcl" && cmd == "fmt" {
						return
					}
					// lint reads .gpuform-lint.hcl and plan the lock file;
					// validate reads neither, and must not hang either.
					if (name == ".gpuform-lint.hcl" && cmd != "lint") || (name == ".gpuform.lock.hcl" && cmd != "plan") {
						return
					}
					// Messages are wrapped: compare with single spaces.
					flat := strings.Join(strings.Fields(r.out+r.err), " ")
					if r.code != ExitFailed || !strings.Contains(flat, "not a regular file") {
						t.Errorf("exit %d, want 1 and \"not a regular file\"\n%s%s", r.code, r.out, r.err)
					}
				case <-time.After(20 * time.Second):
					t.Fatalf("%s still blocked on the FIFO %s after 20s", cmd, name)
				}
			})
		}
	}
}
