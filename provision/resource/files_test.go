package resource

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/local"
)

// probeRoot runs the real facts probe over root.
func probeRoot(t *testing.T, root string) *facts.Node {
	t.Helper()
	n, err := facts.Probe(context.Background(), local.New("root"), facts.Options{Reads: Reads(), Root: root})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// probeFile returns what the real probe reads of path under root.
func probeFile(t *testing.T, root, path string) facts.ConfigFile {
	t.Helper()
	c, ok := probeRoot(t, root).ConfigFile(path)
	if !ok {
		t.Fatalf("the probe did not read %s byte-exact", path)
	}
	return c
}

// runStep runs a step's script as apply would on a simulated root: with
// GPUFORM_ROOT, its input on stdin, and stand-ins that succeed for the
// commands that put a file into effect.
func runStep(t *testing.T, root string, st Step) error {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"update-grub", "systemctl", "grubby", "sysctl", "modprobe", "mount"} {
		if err := os.WriteFile(filepath.Join(bin, tool), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("/bin/sh", "-c", st.Script)
	cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "GPUFORM_ROOT=" + root, "LC_ALL=C.UTF-8"}
	cmd.Stdin = strings.NewReader(st.Input)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return errors.New(string(out))
	}
	return nil
}

// fileCase is one file resource of the fault matrix.
type fileCase struct {
	path string
	// body is the spec that makes gpuform write path.
	body string
	// resource is the resource that writes it.
	resource string
	// kind says what of the file gpuform owns: "whole" (its own drop-ins,
	// replaced entirely), "lines" (one line or key among the operator's)
	// or "json" (daemon.json: keys merged, the text re-rendered).
	kind string
	// base is an existing file that needs a change.
	base string
	// owned reports whether a line is one gpuform writes.
	owned func(line string) bool
}

var fileCases = map[string]fileCase{
	"fstab": {path: FstabFile, body: `shm { size = "50%" }`, resource: ShmMount, kind: "lines",
		base:  "UUID=0a1b / ext4 errors=remount-ro 0 1\ntmpfs /dev/shm tmpfs defaults 0 0\n/dev/sdb1 /boot/efi vfat umask=0077 0 1\n",
		owned: func(l string) bool { return strings.Contains(l, "/dev/shm") }},
	"nccl.conf": {path: NCCLConfFile, body: "affinity {\n nccl_env = true\n nccl_ib_hca = [\"mlx5_0\"]\n}", resource: NCCLConf, kind: "lines",
		base:  "NCCL_DEBUG=INFO\nNCCL_IB_HCA=mlx5_9\n",
		owned: func(l string) bool { return strings.HasPrefix(l, "NCCL_IB_HCA=") }},
	"daemon.json": {path: DaemonJSON, body: "container {\n runtime = \"docker\"\n default_shm_size = \"16GiB\"\n}", resource: DockerDaemon, kind: "json",
		base: "{\n    \"log-driver\": \"json-file\",\n    \"default-shm-size\": \"64M\"\n}\n"},
	"sysctl drop-in": {path: SysctlFile, body: `sysctl = { "vm.swappiness" = "1" }`, resource: Sysctl, kind: "whole",
		base: managedHeader + "vm.swappiness = 60\n"},
	"hugepages": {path: HugePagesFile, body: "hugepages {\n size = \"2MiB\"\n count = 64\n}", resource: HugePages, kind: "whole",
		base: managedHeader + "vm.nr_hugepages = 8\n"},
	"limits": {path: LimitsFile, body: "container {\n runtime = \"docker\"\n ulimits = { memlock = \"unlimited\" }\n}", resource: Limits, kind: "whole",
		base: managedHeader + "* soft memlock 64\n* hard memlock 64\n"},
	"governor tmpfiles": {path: GovernorFile, body: `cpu_governor = "performance"`, resource: CPUGovernor, kind: "whole",
		base: managedHeader + "w /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor - - - - powersave\n"},
	"grub drop-in": {path: GrubDropIn, body: `kernel_args = ["iommu=pt"]`, resource: KernelCmdline, kind: "whole",
		base: managedHeader + `GRUB_CMDLINE_LINUX="$GRUB_CMDLINE_LINUX intel_iommu=on"` + "\n"},
	"modules-load": {path: ModulesLoadFile, body: "", resource: NvidiaPeermem, kind: "whole",
		base: managedHeader + "nvidia_uvm\n"},
}

// fault changes a case's root before the probe; it returns the file that
// gpuform must write (the target of a symlink) relative to root, and the
// content it placed there.
type fault struct {
	// content turns the base file into the faulty one ("" keeps it).
	content func(base string) string
	// setup arranges the root after the file is written at rel; it returns
	// the file gpuform must end up writing, relative to the root.
	setup func(t *testing.T, root, rel string) string
	// refuse is the error plan or apply must end with, by file kind;
	// "" means the write must succeed.
	refuse map[string]string
}

var faults = map[string]fault{
	"NUL byte line": {content: func(b string) string { return b + "/dev/sdc1 /data xfs defaults 0 2\x00\n" },
		refuse: map[string]string{"json": "not valid JSON"}},
	"non-UTF-8 line": {content: func(b string) string { return "# caf\xe9 \xff\xfe\n" + b },
		refuse: map[string]string{"json": "not valid"}},
	"CRLF, trailing spaces, comments": {content: func(b string) string {
		return "# keep me  \r\n" + strings.ReplaceAll(b, "\n", "  \r\n") + "\t# trailing\t \n"
	}, refuse: map[string]string{"json": "not valid JSON"}},
	"no final newline": {content: func(b string) string { return strings.TrimSuffix(b, "\n") }},
	"mode 0600": {setup: func(t *testing.T, root, rel string) string {
		must(t, os.Chmod(filepath.Join(root, rel), 0o600))
		return rel
	}},
	"non-root owner and group": {setup: func(t *testing.T, root, rel string) string {
		must(t, os.Chown(filepath.Join(root, rel), 1234, 5678))
		return rel
	}},
	"relative symlink": {setup: func(t *testing.T, root, rel string) string {
		return linkTo(t, root, rel, "srv/real.conf", true)
	}},
	"absolute symlink": {setup: func(t *testing.T, root, rel string) string {
		return linkTo(t, root, rel, "srv/real.conf", false)
	}},
	"symlinked parent directory": {setup: func(t *testing.T, root, rel string) string {
		dir := filepath.Dir(rel)
		must(t, os.MkdirAll(filepath.Join(root, "srv"), 0o755))
		must(t, os.Rename(filepath.Join(root, dir), filepath.Join(root, "srv", "dir")))
		up := strings.Repeat("../", strings.Count(dir, "/"))
		must(t, os.Symlink(up+"srv/dir", filepath.Join(root, dir)))
		return filepath.Join("srv", "dir", filepath.Base(rel))
	}},
}

// linkTo moves the file at rel to target (relative to root) and links rel
// to it, with a relative or an absolute (root-relative) link.
func linkTo(t *testing.T, root, rel, target string, relative bool) string {
	t.Helper()
	must(t, os.MkdirAll(filepath.Join(root, filepath.Dir(target)), 0o755))
	must(t, os.Rename(filepath.Join(root, rel), filepath.Join(root, target)))
	dest := "/" + target
	if relative {
		dest = strings.Repeat("../", strings.Count(rel, "/")) + target
	}
	must(t, os.Symlink(dest, filepath.Join(root, rel)))
	return target
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// planWrite probes root, plans the case's resource and returns its file
// write step.
func planWrite(t *testing.T, root string, fc fileCase) (Step, *facts.Node, error) {
	t.Helper()
	f := probeRoot(t, root)
	f.OS = facts.OS{ID: "ubuntu", IDLike: []string{"debian"}}
	var r Resource
	if fc.resource == NvidiaPeermem {
		pm, err := peermem(nil, managedHeader)
		must(t, err)
		r = pm
	} else {
		rs, _, err := Build(testKB, loadNode(t, fc.body), f)
		must(t, err)
		for _, x := range rs {
			if x.Name() == fc.resource {
				r = x
			}
		}
	}
	if r == nil {
		t.Fatalf("no %s resource", fc.resource)
	}
	c, err := r.Diff(f)
	if err != nil {
		return Step{}, f, err
	}
	for _, st := range c.Steps {
		if st.Input != "" {
			return st, f, nil
		}
	}
	t.Fatalf("%s plans no file write: %+v", fc.resource, c)
	return Step{}, nil, nil
}

// TestFileFaultMatrix writes every file resource through its real step
// script, on a root read by the real probe, with each fault applied to the
// file beforehand, and checks that what gpuform does not own is kept byte
// for byte, mode and owner are kept, symlinks are written through inside
// the root, and unreadable or ambiguous files are refused.
func TestFileFaultMatrix(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Log("not root: the owner fault checks only that the owner is kept")
	}
	for cname, fc := range fileCases {
		for fname, ft := range faults {
			t.Run(cname+"/"+fname, func(t *testing.T) {
				root := t.TempDir()
				rel := strings.TrimPrefix(fc.path, "/")
				orig := fc.base
				if ft.content != nil {
					orig = ft.content(orig)
				}
				must(t, os.MkdirAll(filepath.Join(root, filepath.Dir(rel)), 0o755))
				must(t, os.WriteFile(filepath.Join(root, rel), []byte(orig), 0o644))
				if fname == "non-root owner and group" && os.Geteuid() != 0 {
					t.Skip("chown needs root")
				}
				target := rel
				if ft.setup != nil {
					target = ft.setup(t, root, rel)
				}
				before, err := os.Stat(filepath.Join(root, target))
				must(t, err)
				st, _, err := planWrite(t, root, fc)
				if want := ft.refuse[fc.kind]; want != "" {
					if err == nil {
						err = runStep(t, root, st)
					}
					if err == nil || !strings.Contains(err.Error(), want) {
						t.Fatalf("want a refusal containing %q, got %v", want, err)
					}
					if b, _ := os.ReadFile(filepath.Join(root, target)); string(b) != orig {
						t.Errorf("a refused write changed the file to %q", b)
					}
					return
				}
				must(t, err)
				if err := runStep(t, root, st); err != nil {
					t.Fatalf("step failed: %v\n%s", err, st.Script)
				}
				got, err := os.ReadFile(filepath.Join(root, target))
				must(t, err)
				checkContent(t, fc, orig, string(got), st.Input)
				after, err := os.Stat(filepath.Join(root, target))
				must(t, err)
				if after.Mode() != before.Mode() {
					t.Errorf("mode %v, was %v", after.Mode(), before.Mode())
				}
				bs, as := before.Sys().(*syscall.Stat_t), after.Sys().(*syscall.Stat_t)
				if as.Uid != bs.Uid || as.Gid != bs.Gid {
					t.Errorf("owner %d:%d, was %d:%d", as.Uid, as.Gid, bs.Uid, bs.Gid)
				}
				if target != rel {
					if fi, err := os.Lstat(filepath.Join(root, rel)); err != nil || fi.Mode()&os.ModeSymlink == 0 && !strings.HasPrefix(target, "srv/dir") {
						t.Errorf("the symlink %s was replaced: %v %v", rel, fi, err)
					}
				}
				backups, _ := filepath.Glob(filepath.Join(root, "var/lib/gpuform/backup/*", target))
				if len(backups) != 1 {
					t.Fatalf("backups of %s: %v", target, backups)
				}
				if b, _ := os.ReadFile(backups[0]); string(b) != orig {
					t.Errorf("backup %q, want the original %q", b, orig)
				}
			})
		}
	}
}

// checkContent checks the written file: gpuform's own files are exactly
// what it planned; in the others every line it does not own is still
// there, byte for byte and in order.
func checkContent(t *testing.T, fc fileCase, orig, got, planned string) {
	t.Helper()
	if got != planned {
		t.Errorf("file %q, planned %q", got, planned)
	}
	switch fc.kind {
	case "whole":
		if !strings.HasPrefix(got, managedHeader) {
			t.Errorf("gpuform's file lost its header: %q", got)
		}
	case "lines":
		var kept []string
		for _, l := range strings.SplitAfter(orig, "\n") {
			if l != "" && !fc.owned(l) {
				kept = append(kept, strings.TrimSuffix(l, "\n"))
			}
		}
		var have []string
		owned := 0
		for _, l := range strings.Split(strings.TrimSuffix(got, "\n"), "\n") {
			if fc.owned(l) {
				owned++
			} else {
				have = append(have, l)
			}
		}
		if strings.Join(have, "\n") != strings.Join(kept, "\n") {
			t.Errorf("lines gpuform does not own changed:\nwas %q\nnow %q", kept, have)
		}
		if owned != 1 {
			t.Errorf("%d lines of gpuform's, want 1: %q", owned, got)
		}
	case "json":
		if !strings.Contains(got, `"log-driver": "json-file"`) || !strings.Contains(got, `"default-shm-size": "16G"`) {
			t.Errorf("daemon.json lost a key or did not get gpuform's: %s", got)
		}
	}
}

// TestFileRefusals covers what must stop a write before anything is
// written: a file changed since the plan, two /dev/shm entries, a link
// loop, and a link that climbs out of the root (which resolves inside it,
// as chroot does, leaving the outside file alone).
func TestFileRefusals(t *testing.T) {
	t.Run("changed between plan and apply", func(t *testing.T) {
		for cname, fc := range fileCases {
			t.Run(cname, func(t *testing.T) {
				root := t.TempDir()
				p := filepath.Join(root, fc.path)
				must(t, os.MkdirAll(filepath.Dir(p), 0o755))
				must(t, os.WriteFile(p, []byte(fc.base), 0o644))
				st, _, err := planWrite(t, root, fc)
				must(t, err)
				changed := fc.base + "# edited by hand\n"
				if fc.kind == "json" {
					changed = strings.Replace(fc.base, "json-file", "journald", 1)
				}
				must(t, os.WriteFile(p, []byte(changed), 0o644))
				if err := runStep(t, root, st); err == nil || !strings.Contains(err.Error(), "changed since this change was planned") {
					t.Fatalf("want a refusal, got %v", err)
				}
				if b, _ := os.ReadFile(p); string(b) != changed {
					t.Errorf("the refused write changed the file: %q", b)
				}
			})
		}
	})
	t.Run("mode changed between plan and apply", func(t *testing.T) {
		root := t.TempDir()
		fc := fileCases["fstab"]
		p := filepath.Join(root, fc.path)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(fc.base), 0o600))
		st, _, err := planWrite(t, root, fc)
		must(t, err)
		must(t, os.Chmod(p, 0o644))
		if err := runStep(t, root, st); err == nil || !strings.Contains(err.Error(), "mode and owner now") {
			t.Fatalf("want a refusal, got %v", err)
		}
	})
	t.Run("two /dev/shm entries", func(t *testing.T) {
		root := t.TempDir()
		fc := fileCases["fstab"]
		p := filepath.Join(root, fc.path)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(fc.base+"none /dev/shm tmpfs size=1g 0 0\n"), 0o644))
		if _, _, err := planWrite(t, root, fc); err == nil || !strings.Contains(err.Error(), "two /dev/shm entries (lines 2 and 4)") {
			t.Fatalf("want a refusal, got %v", err)
		}
	})
	t.Run("symlink loop", func(t *testing.T) {
		root := t.TempDir()
		fc := fileCases["sysctl drop-in"]
		p := filepath.Join(root, fc.path)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.Symlink("90-gpuform.conf", p))
		if _, _, err := planWrite(t, root, fc); err == nil || !strings.Contains(err.Error(), "too many levels of symbolic links") {
			t.Fatalf("want a refusal, got %v", err)
		}
	})
	t.Run("symlink out of the root", func(t *testing.T) {
		outside := filepath.Join(t.TempDir(), "host.conf")
		must(t, os.WriteFile(outside, []byte("host file\n"), 0o644))
		for cname, fc := range fileCases {
			t.Run(cname, func(t *testing.T) {
				root := t.TempDir()
				p := filepath.Join(root, fc.path)
				must(t, os.MkdirAll(filepath.Dir(p), 0o755))
				must(t, os.Symlink(strings.Repeat("../", 12)+strings.TrimPrefix(outside, "/"), p))
				st, f, err := planWrite(t, root, fc)
				must(t, err)
				if cf, _ := f.ConfigFile(fc.path); cf.Exists || cf.Resolved != outside {
					t.Errorf("probe: %+v, want a missing file at %s inside the root", cf, outside)
				}
				if err := runStep(t, root, st); err != nil {
					t.Fatal(err)
				}
				if b, _ := os.ReadFile(outside); string(b) != "host file\n" {
					t.Fatalf("the write left the root: the outside file is %q", b)
				}
				b, err := os.ReadFile(filepath.Join(root, outside))
				if err != nil || !bytes.Equal(b, []byte(st.Input)) {
					t.Errorf("the write did not go to the link's target inside the root: %q %v", b, err)
				}
			})
		}
	})
}

// TestSysctlKeyMustExist: a mistyped key is refused at plan, naming it,
// instead of a drop-in that sysctl -p rejects.
func TestSysctlKeyMustExist(t *testing.T) {
	f := debianNode()
	f.SysctlNames = []string{"vm.swappiness"}
	for _, tc := range []struct {
		name, key, err string
	}{
		{"known", "vm.swappiness", ""},
		{"mistyped", "vm.swapiness", "sysctl vm.swapiness does not exist on this node (no /proc/sys/vm/swapiness)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := sysctlResource(loadNode(t, fmt.Sprintf("sysctl = { %q = \"1\" }", tc.key)), f)
			must(t, err)
			_, err = r.Diff(f)
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("Diff: %v, want %q", err, tc.err)
			}
		})
	}
}
