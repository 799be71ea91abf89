package resource

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/nodesh"
	"github.com/gpuform/gpuform/provision/nodesh/nodeshtest"
)

// sampleImage is an image pinned by digest under a tag.
// sampleSquashFS is a bundle's enroot image file of "image\n", named by
// its sha256 as gpuform bundle names it.
var sampleSquashFS = func() string {
	sum := sha256.Sum256([]byte("image\n"))
	return "enroot/" + hex.EncodeToString(sum[:]) + ".sqsh"
}()

var sampleImage = ImageRef{Ref: "nvcr.io/nvidia/pytorch:25.02-py3", Repo: "nvcr.io/nvidia/pytorch", Tag: "25.02-py3", Digest: "sha256:" + strings.Repeat("a", 64)}

// hostname is uname -n, which image_file_pull.sh puts in its temporary
// names.
func hostname(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("uname", "-n").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// sampleSteps are one step of each of scripts/*.sh, built as the
// resources build them, by script name.
func sampleSteps(t *testing.T) map[string]Step {
	t.Helper()
	must := func(st Step, err error) Step {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	deb := &pkgResource{base: base{name: DriverPackage}, family: FamilyDebian, notOffered: "the CUDA repository is not configured",
		set: pkgSet{names: []string{"cuda-drivers-550"}, pins: map[string]string{"cuda-drivers-550": "550.127.08-*"}, pinning: "nvidia-driver-pinning-550", hold: true}}
	rpm := &pkgResource{base: base{name: DriverPackage}, family: FamilyRHEL, set: pkgSet{names: []string{"nvidia-open"}, pins: map[string]string{"nvidia-open": "3:575.57.08"}}}
	im := ImageRef{Ref: "nvcr.io/nvidia/pytorch:25.02-py3", Repo: "nvcr.io/nvidia/pytorch", Tag: "25.02-py3", Digest: "sha256:" + strings.Repeat("a", 64)}
	files := &imagesResource{runtime: facts.RuntimeEnroot, dir: "/var/lib/enroot/images"}
	pull := (&imagesResource{runtime: facts.RuntimeContainerd}).pull(im, "25.02-py3")
	return map[string]Step{
		"file_write.sh":      must(fileWrite{desc: "write", path: "/etc/sysctl.d/90-gpuform.conf", content: "a = 1\n", then: daemonReload()}.step()),
		"file_remove.sh":     must(removeFileStep("/etc/sysctl.d/90-gpuform.conf", facts.ConfigFile{})),
		"apply_effect.sh":    effectStep("run", unlinkAndReload("/etc/systemd/system/multi-user.target.wants/gpuform-nic-irq.service")),
		"systemd_unit.sh":    must(unitStep("nvidia-persistenced.service", true)),
		"module_load.sh":     scriptStep("load", moduleLoadScript, "nvidia_peermem"),
		"sysctl_apply.sh":    scriptStep("apply", sysctlApplyScript, SysctlFile, "if-present"),
		"shm_remount.sh":     scriptStep("remount", shmRemountScript, "64g"),
		"dpkg_configure.sh":  scriptStep("dpkg", dpkgConfigureScript, "120"),
		"cpu_governor.sh":    {Description: "governor", Script: resolvingScript(cpuGovernorScript, "performance"), Become: true},
		"nic_irq_pin.sh":     scriptStep("pin", nicIRQPinScript, "/usr/local/sbin/gpuform-nic-irq"),
		"nic_mtu.sh":         scriptStep("mtu", nicMTUScript, "enp24s0np0", "4200"),
		"cdi_generate.sh":    scriptStep("cdi", cdiGenerateScript, CDISpecFile),
		"apt_install.sh":     deb.installStep("nvidia-driver-535"),
		"apt_hold.sh":        deb.holdStep([]string{"cuda-drivers-550"}),
		"dnf_install.sh":     rpm.installStep("nvidia-driver"),
		"dnf_versionlock.sh": rpm.holdStep([]string{"nvidia-open"}),
		"image_pull.sh":      pull,
		"image_file_pull.sh": files.pullFile(im, "25.02-py3"),
		"image_reachable.sh": {Description: "check", Script: pull.Check},
		"image_load.sh":      sampleLoad(t),
	}
}

// sampleLoad is an image's load step from an offline bundle's blobs a and
// b (sampleBlobs), into containerd.
func sampleLoad(t *testing.T) Step {
	t.Helper()
	im := ImageRef{Ref: "nvcr.io/nvidia/pytorch:25.02-py3", Repo: "nvcr.io/nvidia/pytorch", Tag: "25.02-py3", Digest: "sha256:" + strings.Repeat("a", 64)}
	b := &facts.BundleImage{Bundle: "/media/bundle", Dir: "/var/lib/gpuform/bundle/images", Name: im.Repo + "@" + im.Digest, Index: "{}\n"}
	for _, c := range sampleBlobs {
		sum := sha256.Sum256([]byte(c))
		b.Blobs = append(b.Blobs, hex.EncodeToString(sum[:]))
	}
	steps, err := (&imagesResource{runtime: facts.RuntimeContainerd}).load(im, b, "linux/amd64")
	if err != nil || len(steps) != 1 {
		t.Fatal(steps, err)
	}
	return steps[0]
}

// sampleBlobs are the content of sampleLoad's blobs.
var sampleBlobs = []string{"a\n", "b\n"}

// TestStepScriptsShellcheck runs shellcheck over scripts/*.sh as they are
// and over a step of each as it is sent: the prelude, the libraries, the
// arguments and the script, one text.
func TestStepScriptsShellcheck(t *testing.T) {
	files := stepScripts(t)
	steps := sampleSteps(t)
	for name := range files {
		if _, ok := steps[name]; !ok && !isLibrary(name) {
			t.Errorf("scripts/%s has no step in sampleSteps: add one, and a case to TestStepScriptsUnderEachShell", name)
		}
	}
	for name, st := range steps {
		if c := callOf(t, st); c.Name != name {
			t.Errorf("sampleSteps[%s] runs %s", name, c.Name)
		}
		files["sent/"+name] = st.Script
		if st.Check != "" {
			files["sent/check-"+name] = st.Check
		}
	}
	nodeshtest.Shellcheck(t, files)
}

// standIns writes a recording stand-in for each tool into a new directory:
// each call appends "tool [arg] [arg]..." to log. A tool's extra shell,
// when given, runs after that (its output, its exit status).
func standIns(t *testing.T, log string, tools map[string]string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for tool, extra := range tools {
		script := "#!/bin/sh\n{ printf '%s' " + q(tool) + "; for a in \"$@\"; do printf ' [%s]' \"$a\"; done; echo; } >>" + q(log) + "\n" + extra + "\n"
		if err := os.WriteFile(filepath.Join(bin, tool), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return bin
}

// TestStepScriptsUnderEachShell runs a step of each kind under dash, bash
// and busybox ash against a scratch root, with recording stand-ins for the
// tools they call first on PATH, and checks what each tool was asked to
// do and what the step left in the root. Under busybox it also proves the
// real tools ran, not busybox's applets of the same name (sysctl, mount,
// modprobe, dpkg, ip), which would neither record nor stay in the root.
func TestStepScriptsUnderEachShell(t *testing.T) {
	type tc struct {
		// tools are the stand-ins and their extra shell.
		tools map[string]string
		// setup prepares the root; step is then built on it.
		setup func(t *testing.T, root string)
		step  func(t *testing.T, root string) Step
		// calls is the stand-ins' log the step must leave.
		calls string
		// check judges the root afterwards.
		check func(t *testing.T, root string)
	}
	write := func(t *testing.T, root, path, content string) {
		t.Helper()
		p := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func(t *testing.T, root, path string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	const conf = "/etc/sysctl.d/90-gpuform.conf"
	cases := map[string]tc{
		"file write, then the effect": {
			tools: map[string]string{"systemctl": ""},
			setup: func(t *testing.T, root string) { write(t, root, conf, "a = 1\n") },
			step: func(t *testing.T, root string) Step {
				st, err := fileWrite{path: conf, content: "a = 2\n", cur: probeFile(t, root, conf), then: daemonReload()}.step()
				must(t, err)
				return st
			},
			calls: "systemctl [daemon-reload]\n",
			check: func(t *testing.T, root string) {
				if got := read(t, root, conf); got != "a = 2\n" {
					t.Errorf("%s holds %q", conf, got)
				}
				backups, _ := filepath.Glob(filepath.Join(root, "var/lib/gpuform/backup/*"+conf))
				if len(backups) != 1 || read(t, root, strings.TrimPrefix(backups[0], root)) != "a = 1\n" {
					t.Errorf("backups %v", backups)
				}
				if _, err := os.Stat(filepath.Join(root, PendingMarker(conf))); !os.IsNotExist(err) {
					t.Errorf("the pending marker is left: %v", err)
				}
				if entries, _ := os.ReadDir(filepath.Join(root, "etc/sysctl.d")); len(entries) != 1 {
					t.Errorf("etc/sysctl.d holds %d entries, want only the file", len(entries))
				}
			},
		},
		"file write, then update-grub": {
			tools: map[string]string{"update-grub": ""},
			setup: func(t *testing.T, root string) { write(t, root, conf, "a = 1\n") },
			step: func(t *testing.T, root string) Step {
				st, err := fileWrite{path: conf, content: "a = 2\n", cur: probeFile(t, root, conf), then: updateGrub()}.step()
				must(t, err)
				return st
			},
			calls: "update-grub\n",
		},
		"file write, then grubby removing and adding": {
			tools: map[string]string{"grubby": ""},
			setup: func(t *testing.T, root string) { write(t, root, conf, "a = 1\n") },
			step: func(t *testing.T, root string) Step {
				st, err := fileWrite{path: conf, content: "a = 2\n", cur: probeFile(t, root, conf), then: grubbyArgs("intel_iommu=on isolcpus=2-7", "iommu=pt hugepages=16")}.step()
				must(t, err)
				return st
			},
			calls: "grubby [--update-kernel=ALL] [--remove-args=intel_iommu=on isolcpus=2-7] [--args=iommu=pt hugepages=16]\n",
		},
		"file write, then grubby only adding": {
			tools: map[string]string{"grubby": ""},
			setup: func(t *testing.T, root string) { write(t, root, conf, "a = 1\n") },
			step: func(t *testing.T, root string) Step {
				st, err := fileWrite{path: conf, content: "a = 2\n", cur: probeFile(t, root, conf), then: grubbyArgs("", "iommu=pt")}.step()
				must(t, err)
				return st
			},
			calls: "grubby [--update-kernel=ALL] [--args=iommu=pt]\n",
		},
		"file write, then made executable": {
			setup: func(t *testing.T, root string) { write(t, root, conf, "a = 1\n") },
			step: func(t *testing.T, root string) Step {
				st, err := fileWrite{path: conf, content: "a = 2\n", cur: probeFile(t, root, conf), then: makeExecutable(conf)}.step()
				must(t, err)
				return st
			},
			check: func(t *testing.T, root string) {
				if fi, err := os.Stat(filepath.Join(root, conf)); err != nil || fi.Mode().Perm() != 0o755 {
					t.Errorf("%s after the step: %v %v, want mode 0755", conf, fi, err)
				}
			},
		},
		"file write, then a restart that fails": {
			tools: map[string]string{"systemctl": "exit 1"},
			setup: func(t *testing.T, root string) { write(t, root, conf, "a = 1\n") },
			step: func(t *testing.T, root string) Step {
				st, err := fileWrite{path: conf, content: "a = 2\n", cur: probeFile(t, root, conf), then: tryRestart("docker.service")}.step()
				must(t, err)
				return st
			},
			// The step fails (checked in the loop) with the old file back.
			calls: "systemctl [try-restart] [docker.service]\n",
			check: func(t *testing.T, root string) {
				if got := read(t, root, conf); got != "a = 1\n" {
					t.Errorf("%s after the failed restart holds %q, want the previous file", conf, got)
				}
				if _, err := os.Stat(filepath.Join(root, PendingMarker(conf))); !os.IsNotExist(err) {
					t.Errorf("the pending marker is left: %v", err)
				}
			},
		},
		"effect step: unit link removed, then daemon-reload": {
			tools: map[string]string{"systemctl": ""},
			setup: func(t *testing.T, root string) {
				write(t, root, "/etc/systemd/system/multi-user.target.wants/x.service", "")
			},
			step: func(t *testing.T, root string) Step {
				return effectStep("", unlinkAndReload("/etc/systemd/system/multi-user.target.wants/x.service"))
			},
			calls: "systemctl [daemon-reload]\n",
			check: func(t *testing.T, root string) {
				if _, err := os.Lstat(filepath.Join(root, "etc/systemd/system/multi-user.target.wants/x.service")); !os.IsNotExist(err) {
					t.Errorf("the enable link is still there: %v", err)
				}
			},
		},
		"file remove": {
			setup: func(t *testing.T, root string) { write(t, root, conf, "a = 1\n") },
			step: func(t *testing.T, root string) Step {
				st, err := removeFileStep(conf, probeFile(t, root, conf))
				must(t, err)
				return st
			},
			check: func(t *testing.T, root string) {
				if _, err := os.Stat(filepath.Join(root, conf)); !os.IsNotExist(err) {
					t.Errorf("%s is still there: %v", conf, err)
				}
				if backups, _ := filepath.Glob(filepath.Join(root, "var/lib/gpuform/backup/*"+conf)); len(backups) != 1 {
					t.Errorf("backups %v", backups)
				}
			},
		},
		"apt install with hold, pinning and a removal": {
			tools: map[string]string{
				"apt-cache": `case $1 in
madison) case $2 in cuda-drivers-550) echo " cuda-drivers-550 | 550.127.08-1 | https://repo main amd64 Packages"; echo " cuda-drivers-550 | 550.90.07-1 | https://repo main amd64 Packages" ;; nvidia-driver-pinning-550) echo " nvidia-driver-pinning-550 | 550.127.08 | https://repo" ;; esac ;;
show) echo "Depends: nvidia-kernel-open-550 (= 550.127.08-1), libc6 (>= 2.34)" ;;
esac`,
				"apt-get": "", "apt-mark": "",
			},
			setup: func(t *testing.T, root string) { write(t, root, aptHoldsFile, "nvidia-driver-535\nslurm\n") },
			step: func(t *testing.T, root string) Step {
				r := &pkgResource{base: base{name: DriverPackage}, family: FamilyDebian,
					set: pkgSet{names: []string{"cuda-drivers-550"}, pins: map[string]string{"cuda-drivers-550": "550.127.08-*"}, pinning: "nvidia-driver-pinning-550", hold: true}}
				return r.installStep("nvidia-driver-535")
			},
			calls: "apt-cache [madison] [cuda-drivers-550]\n" +
				"apt-cache [show] [cuda-drivers-550=550.127.08-1]\n" +
				"apt-cache [madison] [nvidia-driver-pinning-550]\n" +
				"apt-get [install] [-y] [-q] [--no-install-recommends] [--allow-downgrades] [--allow-change-held-packages] [-o] [DPkg::Lock::Timeout=120] [-o] [Dpkg::Options::=--force-confold] [cuda-drivers-550=550.127.08-1] [nvidia-kernel-open-550=550.127.08-1] [nvidia-driver-pinning-550=550.127.08] [nvidia-driver-535-]\n" +
				"apt-mark [hold] [cuda-drivers-550] [nvidia-kernel-open-550] [nvidia-driver-pinning-550]\n",
			check: func(t *testing.T, root string) {
				if got, want := read(t, root, aptHoldsFile), "cuda-drivers-550\nnvidia-driver-pinning-550\nnvidia-kernel-open-550\nslurm\n"; got != want {
					t.Errorf("%s:\n%s\nwant:\n%s", aptHoldsFile, got, want)
				}
			},
		},
		"apt install of a release no repository offers": {
			tools: map[string]string{"apt-cache": "", "apt-get": "", "apt-mark": ""},
			step: func(t *testing.T, root string) Step {
				r := &pkgResource{base: base{name: DriverPackage}, family: FamilyDebian, notOffered: "add NVIDIA's CUDA repository",
					set: pkgSet{names: []string{"cuda-drivers-550"}, pins: map[string]string{"cuda-drivers-550": "550.127.08-*"}}}
				return r.installStep()
			},
			// The lists are refreshed once, then the step fails with the
			// set's message and apt's own status (checked in the loop).
			calls: "apt-cache [madison] [cuda-drivers-550]\n" +
				"apt-get [update] [-q] [-o] [DPkg::Lock::Timeout=120]\n" +
				"apt-cache [madison] [cuda-drivers-550]\n",
		},
		"apt hold": {
			tools: map[string]string{"apt-mark": ""},
			step: func(t *testing.T, root string) Step {
				return (&pkgResource{family: FamilyDebian}).holdStep([]string{"cuda-drivers-550", "nvidia-kernel-open-550"})
			},
			calls: "apt-mark [hold] [cuda-drivers-550] [nvidia-kernel-open-550]\n",
			check: func(t *testing.T, root string) {
				if got := read(t, root, aptHoldsFile); got != "cuda-drivers-550\nnvidia-kernel-open-550\n" {
					t.Errorf("%s: %q", aptHoldsFile, got)
				}
			},
		},
		"dnf install that fails puts the version locks back": {
			tools: map[string]string{"dnf": `case $* in *install*) exit 1 ;; *delete*) : >"$GPUFORM_ROOT/etc/dnf/plugins/versionlock.list" ;; esac`},
			setup: func(t *testing.T, root string) {
				write(t, root, "/etc/dnf/plugins/versionlock.list", "nvidia-open-3:570.1-1.*\n")
			},
			step: func(t *testing.T, root string) Step {
				r := &pkgResource{family: FamilyRHEL, notOffered: "add NVIDIA's CUDA repository", set: pkgSet{names: []string{"nvidia-open"}, pins: map[string]string{"nvidia-open": "3:575.57.08"}}}
				return r.installStep("nvidia-driver")
			},
			calls: "dnf [makecache] [-q]\n" +
				"dnf [-q] [versionlock] [delete] [nvidia-open] [nvidia-driver]\n" +
				"dnf [install] [-y] [-q] [--allowerasing] [nvidia-open-3:575.57.08]\n",
			check: func(t *testing.T, root string) {
				if got := read(t, root, "/etc/dnf/plugins/versionlock.list"); got != "nvidia-open-3:570.1-1.*\n" {
					t.Errorf("versionlock.list after the failed install: %q", got)
				}
			},
		},
		"sysctl apply": {
			tools: map[string]string{"sysctl": ""},
			setup: func(t *testing.T, root string) { write(t, root, SysctlFile, "vm.swappiness = 1\n") },
			step: func(t *testing.T, root string) Step {
				return scriptStep("", sysctlApplyScript, SysctlFile, "if-present")
			},
			calls: "sysctl [-q] [-p] [" + SysctlFile + "]\n",
		},
		"sysctl apply without the file": {
			tools: map[string]string{"sysctl": ""},
			step: func(t *testing.T, root string) Step {
				return scriptStep("", sysctlApplyScript, SysctlFile, "if-present")
			},
		},
		"shm remount": {
			tools: map[string]string{"mount": ""},
			step:  func(t *testing.T, root string) Step { return scriptStep("", shmRemountScript, "64g") },
			calls: "mount [-o] [remount,size=64g] [/dev/shm]\n",
		},
		"module load": {
			tools: map[string]string{"modprobe": ""},
			step:  func(t *testing.T, root string) Step { return scriptStep("", moduleLoadScript, "nvidia_peermem") },
			calls: "modprobe [nvidia_peermem]\n",
		},
		"dpkg configure": {
			tools: map[string]string{"dpkg": ""},
			step: func(t *testing.T, root string) Step {
				return scriptStep("", dpkgConfigureScript, "120")
			},
			calls: "dpkg [--force-confold] [--configure] [-a]\ndpkg [--audit]\n",
		},
		"nic mtu": {
			tools: map[string]string{"ip": ""},
			step:  func(t *testing.T, root string) Step { return scriptStep("", nicMTUScript, "enp24s0np0", "4200") },
			calls: "ip [link] [set] [dev] [enp24s0np0] [mtu] [4200]\n",
		},
		"unit restart if active": {
			tools: map[string]string{"systemctl": ""},
			step: func(t *testing.T, root string) Step {
				return systemdUnitStep("", unitRestartIfActive, "slurmd.service")
			},
			calls: "systemctl [is-active] [--quiet] [slurmd.service]\nsystemctl [restart] [slurmd.service]\n",
		},
		"cpu governor": {
			setup: func(t *testing.T, root string) {
				write(t, root, "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "powersave\n")
				write(t, root, "/sys/devices/system/cpu/cpu1/online", "1\n")
			},
			step: func(t *testing.T, root string) Step {
				return Step{Script: resolvingScript(cpuGovernorScript, "performance")}
			},
			check: func(t *testing.T, root string) {
				if got := read(t, root, "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"); got != "performance\n" {
					t.Errorf("cpu0's governor: %q", got)
				}
				if _, err := os.Stat(filepath.Join(root, "sys/devices/system/cpu/cpu1/cpufreq")); !os.IsNotExist(err) {
					t.Errorf("a governor was made for cpu1, which has no cpufreq: %v", err)
				}
			},
		},
		"containerd pull with ctr": {
			tools: map[string]string{"ctr": ""},
			step: func(t *testing.T, root string) Step {
				im := ImageRef{Ref: "nvcr.io/nvidia/pytorch:25.02-py3", Repo: "nvcr.io/nvidia/pytorch", Tag: "25.02-py3", Digest: "sha256:" + strings.Repeat("a", 64)}
				return (&imagesResource{runtime: facts.RuntimeContainerd}).pull(im, "")
			},
			calls: "ctr [-n] [k8s.io] [images] [pull] [nvcr.io/nvidia/pytorch@sha256:" + strings.Repeat("a", 64) + "]\n" +
				"ctr [-n] [k8s.io] [images] [tag] [--force] [nvcr.io/nvidia/pytorch@sha256:" + strings.Repeat("a", 64) + "] [nvcr.io/nvidia/pytorch:25.02-py3]\n",
		},
		"enroot pull into image_dir, the tag's link and the ledger": {
			// The stand-in writes the image where it was told, under the root.
			tools: map[string]string{"enroot": `printf 'image\n' >"$GPUFORM_ROOT$3"`},
			setup: func(t *testing.T, root string) {
				if err := os.MkdirAll(filepath.Join(root, "var/lib/enroot/images"), 0o755); err != nil {
					t.Fatal(err)
				}
			},
			step: func(t *testing.T, root string) Step {
				return (&imagesResource{runtime: facts.RuntimeEnroot, dir: "/var/lib/enroot/images"}).pullFile(sampleImage, "25.02-py3")
			},
			calls: "enroot [import] [--output] [/var/lib/enroot/images/." + facts.ImageFileName(sampleImage.Repo, sampleImage.Digest, facts.RuntimeEnroot) + "." + hostname(t) + ".PID.gpuform-tmp] [" + EnrootURI(sampleImage) + "]\n",
			check: func(t *testing.T, root string) {
				file := facts.ImageFileName(sampleImage.Repo, sampleImage.Digest, facts.RuntimeEnroot)
				dir := filepath.Join(root, "var/lib/enroot/images")
				if got := read(t, root, "/var/lib/enroot/images/"+file); got != "image\n" {
					t.Errorf("image file: %q", got)
				}
				if l, err := os.Readlink(filepath.Join(dir, facts.ImageLinkName(sampleImage.Repo, sampleImage.Tag, facts.RuntimeEnroot))); err != nil || l != file {
					t.Errorf("tag link: %q %v", l, err)
				}
				sum := sha256.Sum256([]byte("image\n"))
				ledger := read(t, root, facts.ImageFilesLedger)
				if !strings.HasSuffix(ledger, " /var/lib/enroot/images/"+file+" sha256:"+hex.EncodeToString(sum[:])+"\n") || strings.Count(ledger, "\n") != 1 {
					t.Errorf("ledger: %q", ledger)
				}
				if got := read(t, root, facts.ImageDirsFile); got != "/var/lib/enroot/images\n" {
					t.Errorf("image dirs: %q", got)
				}
			},
		},
		"enroot copy of a bundle's image file into image_dir, recorded in the ledger": {
			tools: map[string]string{"enroot": ""},
			setup: func(t *testing.T, root string) {
				write(t, root, "/var/lib/gpuform/bundle/images/"+sampleSquashFS, "image\n")
			},
			step: func(t *testing.T, root string) Step {
				return (&imagesResource{runtime: facts.RuntimeEnroot, dir: "/var/lib/enroot/images"}).fileStep(sampleImage, "squashfs:/var/lib/gpuform/bundle/images/"+sampleSquashFS, "")
			},
			check: func(t *testing.T, root string) {
				file := facts.ImageFileName(sampleImage.Repo, sampleImage.Digest, facts.RuntimeEnroot)
				if got := read(t, root, "/var/lib/enroot/images/"+file); got != "image\n" {
					t.Errorf("image file: %q", got)
				}
				sum := sha256.Sum256([]byte("image\n"))
				if ledger := read(t, root, facts.ImageFilesLedger); !strings.HasSuffix(ledger, " /var/lib/enroot/images/"+file+" sha256:"+hex.EncodeToString(sum[:])+"\n") {
					t.Errorf("ledger: %q", ledger)
				}
				if _, err := os.Stat(filepath.Join(root, "var/lib/gpuform/bundle/images", sampleSquashFS)); !os.IsNotExist(err) {
					t.Errorf("the bundle's copy is left on the node: %v", err)
				}
			},
		},
		"enroot copy of a bundle's image file that is not its sha256 is refused": {
			tools: map[string]string{"enroot": ""},
			setup: func(t *testing.T, root string) {
				write(t, root, "/var/lib/gpuform/bundle/images/"+sampleSquashFS, "tampered\n")
			},
			step: func(t *testing.T, root string) Step {
				return (&imagesResource{runtime: facts.RuntimeEnroot, dir: "/var/lib/enroot/images"}).fileStep(sampleImage, "squashfs:/var/lib/gpuform/bundle/images/"+sampleSquashFS, "")
			},
			check: func(t *testing.T, root string) {
				if ents, err := os.ReadDir(filepath.Join(root, "var/lib/enroot/images")); err != nil || len(ents) != 0 {
					t.Errorf("image_dir after a refused copy: %v (%v)", ents, err)
				}
				if _, err := os.Stat(filepath.Join(root, facts.ImageFilesLedger)); !os.IsNotExist(err) {
					t.Errorf("a refused copy was recorded in the ledger: %v", err)
				}
			},
		},
		"registry check with curl": {
			tools: map[string]string{"curl": ""},
			step: func(t *testing.T, root string) Step {
				return Step{Script: imageReachableCheck(sampleImage, facts.RuntimeDocker)}
			},
			calls: "curl [-sS] [-o] [/dev/null] [--max-time] [20] [--max-filesize] [1048576] [https://nvcr.io/v2/]\n",
		},
		"containerd load of a bundle's blobs": {
			tools: map[string]string{"ctr": ""},
			setup: func(t *testing.T, root string) {
				for _, c := range sampleBlobs {
					sum := sha256.Sum256([]byte(c))
					write(t, root, "/var/lib/gpuform/bundle/images/blobs/sha256/"+hex.EncodeToString(sum[:]), c)
				}
			},
			step: func(t *testing.T, root string) Step { return sampleLoad(t) },
			calls: "ctr [-n] [k8s.io] [images] [import] [--platform] [linux/amd64] [-]\n" +
				"ctr [-n] [k8s.io] [images] [tag] [--force] [nvcr.io/nvidia/pytorch@sha256:" + strings.Repeat("a", 64) + "] [nvcr.io/nvidia/pytorch:25.02-py3]\n",
			check: func(t *testing.T, root string) {
				if ents, _ := os.ReadDir(filepath.Join(root, "var/lib/gpuform/bundle/images")); len(ents) != 1 || ents[0].Name() != "blobs" {
					t.Errorf("the load left files beside the blobs: %v", ents)
				}
			},
		},
		"docker pull by digest, no tag": {
			tools: map[string]string{"docker": ""},
			step: func(t *testing.T, root string) Step {
				im := ImageRef{Ref: "nvcr.io/nvidia/pytorch@sha256:" + strings.Repeat("b", 64), Repo: "nvcr.io/nvidia/pytorch", Digest: "sha256:" + strings.Repeat("b", 64)}
				return (&imagesResource{runtime: facts.RuntimeDocker}).pull(im, "")
			},
			calls: "docker [pull] [nvcr.io/nvidia/pytorch@sha256:" + strings.Repeat("b", 64) + "]\n",
		},
	}
	names := make([]string, 0, len(cases))
	for name := range cases {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, sh := range nodeshtest.Shells() {
		for _, name := range names {
			c := cases[name]
			t.Run(sh.Name+"/"+name, func(t *testing.T) {
				root := t.TempDir()
				if c.setup != nil {
					c.setup(t, root)
				}
				log := filepath.Join(t.TempDir(), "calls")
				bin := standIns(t, log, c.tools)
				st := c.step(t, root)
				cmd := nodeshtest.Command(t, sh, st.Script)
				cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "GPUFORM_ROOT=" + root, "LC_ALL=C.UTF-8"}
				cmd.Stdin = strings.NewReader(st.Input)
				out, err := cmd.CombinedOutput()
				if name == "apt install of a release no repository offers" {
					var ee *exec.ExitError
					if !errors.As(err, &ee) || ee.ExitCode() != nodesh.ExitNotOffered || !strings.Contains(string(out), "gpuform: add NVIDIA's CUDA repository.") {
						t.Errorf("exit %v, want 100 with the set's message:\n%s", err, out)
					}
				} else if name == "file write, then a restart that fails" {
					if err == nil || !strings.Contains(string(out), "gpuform: "+conf+" was not put into effect; the previous file is back in place") {
						t.Errorf("exit %v, want a failure that says the previous file is back:\n%s", err, out)
					}
				} else if name == "dnf install that fails puts the version locks back" {
					if err == nil || !strings.Contains(string(out), "If the release is missing from this node's repositories: add NVIDIA's CUDA repository.") {
						t.Errorf("exit %v, want a failure with the set's hint:\n%s", err, out)
					}
				} else if name == "enroot copy of a bundle's image file that is not its sha256 is refused" {
					if err == nil || !strings.Contains(string(out), "refused by its hash, nothing was installed") {
						t.Errorf("exit %v, want the copy refused by its hash:\n%s", err, out)
					}
				} else if err != nil {
					t.Fatalf("%v\n%s", err, out)
				}
				calls, _ := os.ReadFile(log)
				// A temporary name carries the step shell's pid.
				got := regexp.MustCompile(`\.[0-9]+\.gpuform-tmp\]`).ReplaceAllString(string(calls), ".PID.gpuform-tmp]")
				if d := cmp.Diff(c.calls, got); d != "" {
					t.Errorf("tools called (-want +got):\n%s", d)
				}
				if c.check != nil {
					c.check(t, root)
				}
			})
		}
	}
}
