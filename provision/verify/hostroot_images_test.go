package verify

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuform/gpuform/internal/sshtest"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/local"
	"github.com/gpuform/gpuform/provision/resource"
	"github.com/gpuform/gpuform/spec"
)

// writeExec writes an executable script.
func writeExec(t *testing.T, path, script string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// listenUnix makes a unix socket at path, as a daemon of the node holds
// it, for as long as the test runs.
func listenUnix(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
}

// shortTempDir is a temporary directory with a short path: a unix
// socket's path is at most 107 bytes, and t.TempDir's carry the test's
// name.
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "hr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// Under -host-root (the node's / mounted into a pod), container.image_digest
// judges the node's runtime: this machine's own client asks the daemon
// through the node's socket under the root (docker -H, ctr --address),
// never its own socket and never a client under the root; a daemon that
// refuses it is an error. Where the pod cannot ask (no client on its
// PATH, or the root's /run not visible), the check is not run and
// needed, never passed nor failed as absent.
//
// Each fake root holds the node's sockets; the stand-in clients on this
// machine's PATH answer with what the daemon behind the socket they are
// given holds (a file beside it in the root), so a listing shows which
// socket was asked.
func TestImageDigestUnderHostRoot(t *testing.T) {
	t.Parallel()
	const ref = "nvcr.io/nvidia/pytorch:25.02-py3"
	pinned := "sha256:" + strings.Repeat("a", 64)
	other := "sha256:" + strings.Repeat("b", 64)
	// The pod's own clients: each records the socket it was given and
	// prints the listing of the daemon behind it.
	own := t.TempDir()
	writeExec(t, filepath.Join(own, "ctr"), `[ "$1" = --address ] && [ "$3 $4 $5 $6" = "-n k8s.io images ls" ] || { echo "ctr: unexpected arguments $*" >&2; exit 2; }
echo "$2" >>"$GPUFORM_TEST_ASKED"
[ -s "$2.images" ] || { echo "ctr: failed to dial \"$2\": connection error: permission denied" >&2; exit 1; }
echo "REF TYPE DIGEST SIZE PLATFORMS LABELS"
cat "$2.images"
`)
	writeExec(t, filepath.Join(own, "docker"), `[ "$1" = -H ] && [ "$3 $4" = "image ls" ] || { echo "docker: unexpected arguments $*" >&2; exit 2; }
echo "${2#unix://}" >>"$GPUFORM_TEST_ASKED"
cat "${2#unix://}.images"
`)
	ctrSock, dockerSock := "run/containerd/containerd.sock", "run/docker.sock"
	type layout struct {
		sockets map[string]string // socket under the root: what its daemon holds
		files   []string          // other files under the root
		links   map[string]string // symlinks under the root: their targets ("OUT" is a directory outside the root)
		rootCtr bool              // a ctr under the root, first on PATH
		ownPATH bool              // this machine's clients on PATH
	}
	ctrHolds := func(digest string) string {
		return ref + " application/vnd.oci.image.index.v1+json " + digest + " 10.0 GiB linux/amd64 -\n"
	}
	dockerHolds := func(digest string) string {
		return "sha256:" + strings.Repeat("c", 64) + " nvcr.io/nvidia/pytorch 25.02-py3 " + digest + "\n"
	}
	cases := []struct {
		name     string
		runtime  string
		root     layout
		status   Status
		observed string
		msg      string
		asked    string // the socket under the root a client was given
	}{
		{"containerd: the node's daemon holds the pin", "containerd", layout{sockets: map[string]string{ctrSock: ctrHolds(pinned)}, ownPATH: true}, StatusPass, pinned, "", ctrSock},
		{"containerd: the node's tag moved", "containerd", layout{sockets: map[string]string{ctrSock: ctrHolds(other)}, ownPATH: true}, StatusFail, other, "the tag now points elsewhere", ctrSock},
		{"docker: the node's daemon holds the pin", "docker", layout{sockets: map[string]string{dockerSock: dockerHolds(pinned)}, ownPATH: true}, StatusPass, pinned, "", dockerSock},
		{"containerd: the node's daemon refuses the pod", "containerd", layout{sockets: map[string]string{ctrSock: ""}, ownPATH: true}, StatusError, "",
			"the containerd images cannot be listed: ctr: failed to dial", ctrSock},
		{"containerd: no daemon on the node", "containerd", layout{files: []string{"run/systemd/units/invocation:ssh.service"}, ownPATH: true}, StatusFail, "absent", "not running on the node", ""},
		{"containerd: no ctr in the pod, only the node's", "containerd", layout{sockets: map[string]string{ctrSock: ctrHolds(pinned)}, rootCtr: true}, StatusNotRun, "not asked",
			"the node has /run/containerd/containerd.sock, but this machine has no ctr client on PATH to ask it with (nothing under the host root is run)", ""},
		// The node's socket a link to an absolute path: the path as the
		// node sees it, under the root, never this machine's.
		{"containerd: the node's socket a link inside the root", "containerd", layout{sockets: map[string]string{"run/k3s/containerd/containerd.sock": ctrHolds(pinned)},
			links: map[string]string{ctrSock: "/run/k3s/containerd/containerd.sock"}, ownPATH: true}, StatusPass, pinned, "", "run/k3s/containerd/containerd.sock"},
		{"containerd: the node's socket a link out of the root", "containerd", layout{links: map[string]string{ctrSock: "/OUT/containerd.sock"}, ownPATH: true},
			StatusFail, "absent", "not running on the node", ""},
		{"containerd: the node's socket a relative link climbing out of the root", "containerd", layout{links: map[string]string{ctrSock: "../../../../../../../../OUT/containerd.sock"}, ownPATH: true},
			StatusFail, "absent", "not running on the node", ""},
		{"docker: the node's /run not visible", "docker", layout{files: []string{"etc/hostname"}, ownPATH: true}, StatusNotRun, "not asked",
			"the node's /run is not visible under the host root", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := shortTempDir(t)
			if err := os.MkdirAll(filepath.Join(root, "run"), 0o755); err != nil {
				t.Fatal(err)
			}
			for sock, holds := range tc.root.sockets {
				listenUnix(t, filepath.Join(root, sock))
				if err := os.WriteFile(filepath.Join(root, sock+".images"), []byte(holds), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			// A daemon outside the root that says the pin is there:
			// asked only by a probe that follows a link out of the root.
			out := shortTempDir(t)
			listenUnix(t, filepath.Join(out, "containerd.sock"))
			if err := os.WriteFile(filepath.Join(out, "containerd.sock.images"), []byte(ctrHolds(pinned)), 0o644); err != nil {
				t.Fatal(err)
			}
			for l, target := range tc.root.links {
				if err := os.MkdirAll(filepath.Dir(filepath.Join(root, l)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(strings.Replace(target, "OUT", strings.TrimPrefix(out, "/"), 1), filepath.Join(root, l)); err != nil {
					t.Fatal(err)
				}
			}
			for _, f := range tc.root.files {
				if err := os.MkdirAll(filepath.Dir(filepath.Join(root, f)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(root, f), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			marks := t.TempDir()
			path := "/usr/bin:/bin"
			if tc.root.ownPATH {
				path = own + ":" + path
			}
			if tc.root.rootCtr {
				// Were it run, it would say the pin is there.
				writeExec(t, filepath.Join(root, "usr/local/bin/ctr"), ": >\""+marks+"/root-ctr-ran\"\necho REF TYPE DIGEST\n"+ctrHolds(pinned))
				path = filepath.Join(root, "usr/local/bin") + ":" + path
			}
			asked := filepath.Join(marks, "asked")
			lt := local.New("node", local.WithEnv(map[string]string{"PATH": path, "GPUFORM_TEST_ASKED": asked}))
			f, err := facts.Probe(context.Background(), lt, facts.Options{Reads: resource.Reads(), Root: root, HostRoot: true})
			if err != nil {
				t.Fatal(err)
			}
			n := &spec.Node{Name: "n", Container: &spec.Container{
				Runtime: spec.Attr[string]{V: tc.runtime, Set: true},
				Images:  []spec.Attr[string]{{V: ref, Set: true}},
				Pins:    map[string]spec.ImagePin{ref: {Digest: pinned}},
			}}
			got := checkImageDigests(Expectation{KB: testKB, Spec: n}, f, nil)
			if len(got) != 1 {
				t.Fatalf("%d results: %+v", len(got), got)
			}
			r := got[0]
			if r.Status != tc.status || r.Observed != tc.observed || !strings.Contains(r.Message, tc.msg) || r.Needed != (tc.status == StatusNotRun) {
				t.Errorf("%+v", r)
			}
			b, _ := os.ReadFile(asked)
			want := ""
			if tc.asked != "" {
				physical, err := filepath.EvalSymlinks(root)
				if err != nil {
					t.Fatal(err)
				}
				want = filepath.Join(physical, tc.asked) + "\n"
			}
			if string(b) != want {
				t.Errorf("the clients asked %q, want %q", b, want)
			}
			if _, err := os.Stat(filepath.Join(marks, "root-ctr-ran")); err == nil {
				t.Error("the ctr under the host root ran")
			}
			// spec.container_images, plan's comparison, is not run either
			// where the node's store was not asked.
			if tc.status == StatusNotRun {
				specs, _ := checkSpec(Expectation{KB: testKB, Spec: n}, HostFacts{Facts: f})
				found := false
				for _, c := range specs {
					if c.ID != CheckSpecResource.Named(resource.ContainerImages) {
						continue
					}
					found = true
					if c.Status != StatusNotRun || !c.Needed || !strings.Contains(c.Message, tc.msg) {
						t.Errorf("%+v", c)
					}
				}
				if !found {
					t.Errorf("no %s check in %+v", CheckSpecResource.Named(resource.ContainerImages), specs)
				}
			}
		})
	}
}

// Under a simulated root (a root prefix, no host root), a node whose
// containerd socket is a link (to /run/k3s/..., as k3s and RKE2 place
// it) is asked through the root's own ctr, as one whose socket is the
// file itself: the link is the node's, resolved inside the root, and
// never makes the store read as absent.
func TestImageDigestUnderRootSocketLink(t *testing.T) {
	t.Parallel()
	const ref = "nvcr.io/nvidia/pytorch:25.02-py3"
	pinned := "sha256:" + strings.Repeat("a", 64)
	root := shortTempDir(t)
	for _, d := range []string{"run/containerd", "run/k3s/containerd", "usr/local/bin"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "run/k3s/containerd/containerd.sock"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/run/k3s/containerd/containerd.sock", filepath.Join(root, "run/containerd/containerd.sock")); err != nil {
		t.Fatal(err)
	}
	writeExec(t, filepath.Join(root, "usr/local/bin/ctr"), "echo REF TYPE DIGEST SIZE PLATFORMS LABELS\necho '"+ref+" application/vnd.oci.image.index.v1+json "+pinned+" 10.0 GiB linux/amd64 -'\n")
	lt := local.New("node", local.WithEnv(map[string]string{"PATH": filepath.Join(root, "usr/local/bin") + ":/usr/bin:/bin"}))
	f, err := facts.Probe(context.Background(), lt, facts.Options{Reads: resource.Reads(), Root: root})
	if err != nil {
		t.Fatal(err)
	}
	n := &spec.Node{Name: "n", Container: &spec.Container{
		Runtime: spec.Attr[string]{V: "containerd", Set: true},
		Images:  []spec.Attr[string]{{V: ref, Set: true}},
		Pins:    map[string]spec.ImagePin{ref: {Digest: pinned}},
	}}
	got := checkImageDigests(Expectation{KB: testKB, Spec: n}, f, nil)
	if len(got) != 1 || got[0].Status != StatusPass || got[0].Observed != pinned {
		t.Errorf("%+v", got)
	}
}

// At -tier full, an enroot image file is hashed where the node has it:
// under -host-root, the file under the root, by this machine's
// sha256sum; without it, the path on this machine, which has none.
func TestHashImageFilesUnderHostRoot(t *testing.T) {
	t.Parallel()
	const ref = "nvcr.io/nvidia/pytorch:25.02-py3"
	pinned := "sha256:" + strings.Repeat("a", 64)
	n := &spec.Node{Name: "n", Container: &spec.Container{
		Runtime:  spec.Attr[string]{V: "enroot", Set: true},
		ImageDir: spec.Attr[string]{V: "/raid/gpuform-test-containers", Set: true},
		Images:   []spec.Attr[string]{{V: ref, Set: true}},
		Pins:     map[string]spec.ImagePin{ref: {Digest: pinned}},
	}}
	file := "/raid/gpuform-test-containers/" + facts.ImageFileName("nvcr.io/nvidia/pytorch", pinned, "enroot")
	f := &facts.Node{Images: map[string]*facts.ImageStore{"enroot": {Images: []facts.LocalImage{{ID: file, Tags: []string{ref}, Digests: []string{"nvcr.io/nvidia/pytorch@" + pinned}}}}}}
	root := t.TempDir()
	content := []byte("the node's squashfs")
	if err := os.MkdirAll(filepath.Join(root, filepath.Dir(file)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, file), content, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(content)
	lt := local.New("node")
	exp := Expectation{KB: testKB, Spec: n}
	got := HashImageFiles(context.Background(), lt, exp, f, root, false, 10*time.Second)
	if c := got[file]; c.SHA256 != hex.EncodeToString(sum[:]) || c.Error != "" {
		t.Errorf("under the host root: %+v, want sha256 %x", c, sum)
	}
	got = HashImageFiles(context.Background(), lt, exp, f, "", false, 10*time.Second)
	if c := got[file]; c.SHA256 != "" || c.Error == "" {
		t.Errorf("without a host root, this machine has no %s, yet: %+v", file, c)
	}
}

// The real containerd and ctr (Debian's package), the daemon's socket in
// a node's root: under -host-root the probe's ctr --address asks that
// daemon, which lists its (empty) k8s.io store, so the pinned image is
// judged absent from the node's store, not from a daemon that is not
// running, and not as not run.
func TestImageDigestUnderHostRootRealContainerd(t *testing.T) {
	bin, err := exec.LookPath("containerd")
	if err != nil {
		sshtest.Missing(t, "containerd is not installed (apt-get install containerd)")
	}
	ctrBin, err := exec.LookPath("ctr")
	if err != nil {
		sshtest.Missing(t, "ctr is not installed (apt-get install containerd)")
	}
	if os.Geteuid() != 0 {
		sshtest.Missing(t, "containerd runs as root only")
	}
	t.Parallel()
	root, state := shortTempDir(t), t.TempDir()
	sock := filepath.Join(root, "run/containerd/containerd.sock")
	if err := os.MkdirAll(filepath.Dir(sock), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(state, "config.toml")
	if err := os.WriteFile(cfg, []byte("version = 2\nroot = \""+state+"/root\"\nstate = \""+state+"/state\"\ndisabled_plugins = [\"io.containerd.grpc.v1.cri\"]\n[grpc]\n  address = \""+sock+"\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	daemon := exec.Command(bin, "--config", cfg)
	log, err := os.Create(filepath.Join(state, "log"))
	if err != nil {
		t.Fatal(err)
	}
	daemon.Stdout, daemon.Stderr = log, log
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = daemon.Process.Kill()
		_ = daemon.Wait()
		log.Close()
	})
	for i := 0; ; i++ {
		if _, err := exec.Command(ctrBin, "--address", sock, "version").CombinedOutput(); err == nil {
			break
		}
		if i == 100 {
			b, _ := os.ReadFile(filepath.Join(state, "log"))
			t.Fatalf("containerd did not start:\n%s", b)
		}
		time.Sleep(100 * time.Millisecond)
	}
	lt := local.New("node", local.WithEnv(map[string]string{"PATH": filepath.Dir(ctrBin) + ":/usr/bin:/bin"}))
	f, err := facts.Probe(context.Background(), lt, facts.Options{Reads: resource.Reads(), Root: root, HostRoot: true})
	if err != nil {
		t.Fatal(err)
	}
	if s := f.Images[facts.RuntimeContainerd]; s == nil || s.Error != "" || s.NotRun != "" {
		t.Fatalf("the node's containerd store: %+v", s)
	}
	const ref = "nvcr.io/nvidia/pytorch:25.02-py3"
	n := &spec.Node{Name: "n", Container: &spec.Container{
		Runtime: spec.Attr[string]{V: "containerd", Set: true},
		Images:  []spec.Attr[string]{{V: ref, Set: true}},
		Pins:    map[string]spec.ImagePin{ref: {Digest: "sha256:" + strings.Repeat("a", 64)}},
	}}
	got := checkImageDigests(Expectation{KB: testKB, Spec: n}, f, nil)
	if len(got) != 1 || got[0].Status != StatusFail || got[0].Observed != "absent" || !strings.Contains(got[0].Message, "containerd holds no "+ref) {
		t.Errorf("%+v", got)
	}
}
