package debroot

import (
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// Deb is a package the test builds with dpkg-deb and publishes in the
// root's repository. Only the fields apt resolves on are modelled; the
// contents are a few marker files.
type Deb struct {
	Name    string
	Version string
	// Arch is the Debian architecture; "" is amd64.
	Arch string
	// Depends, Provides, Conflicts and Replaces are control-file values as
	// written ("nvidia-kernel-open-580 (= 580.95.05-1)").
	Depends, Provides, Conflicts, Replaces string
	// Files maps absolute paths to contents; every package also gets
	// /usr/share/gpuform-test/<name> holding its version.
	Files map[string]string
	// Postinst is the maintainer script run by dpkg --configure ("" = none).
	Postinst string
}

func (d Deb) arch() string {
	if d.Arch == "" {
		return "amd64"
	}
	return d.Arch
}

func (d Deb) control() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Package: %s\nVersion: %s\nArchitecture: %s\nMaintainer: gpuform tests <tests@gpuform.invalid>\nPriority: optional\nSection: misc\n", d.Name, d.Version, d.arch())
	for _, f := range []struct{ k, v string }{{"Depends", d.Depends}, {"Provides", d.Provides}, {"Conflicts", d.Conflicts}, {"Replaces", d.Replaces}} {
		if f.v != "" {
			fmt.Fprintf(&b, "%s: %s\n", f.k, f.v)
		}
	}
	fmt.Fprintf(&b, "Description: %s test package\n built by gpuform's tests with NVIDIA's name, version and dependencies.\n", d.Name)
	return b.String()
}

// Publish adds packages to the root's repository and rebuilds its index.
// The root's package lists are not refreshed: a release published after the
// node's last apt-get update is what a real mirror update looks like.
func (r *Root) Publish(t testing.TB, debs ...Deb) {
	t.Helper()
	r.mu.Lock()
	r.debs = append(r.debs, debs...)
	r.mu.Unlock()
	r.writeRepo(t)
}

func debFile(d Deb) string {
	v := d.Version
	if i := strings.IndexByte(v, ':'); i >= 0 {
		v = v[i+1:]
	}
	return fmt.Sprintf("%s_%s_%s.deb", d.Name, v, d.arch())
}

// writeRepo builds every package not yet built and writes Packages and
// Release for a flat repository ("deb [trusted=yes] file:/srv/gpuform-repo ./").
func (r *Root) writeRepo(t testing.TB) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	debs := append([]Deb(nil), r.debs...)
	sort.SliceStable(debs, func(i, j int) bool { return debs[i].Name < debs[j].Name })
	var index strings.Builder
	for _, d := range debs {
		file := filepath.Join(r.RepoDir, debFile(d))
		if _, err := os.Stat(file); err != nil {
			writeDeb(t, d, file)
		}
		b, err := os.ReadFile(file)
		must(t, err)
		sum := sha256.Sum256(b)
		md := md5.Sum(b)
		index.WriteString(d.control())
		fmt.Fprintf(&index, "Filename: ./%s\nSize: %d\nMD5sum: %s\nSHA256: %s\n\n", filepath.Base(file), len(b), hex.EncodeToString(md[:]), hex.EncodeToString(sum[:]))
	}
	packages := []byte(index.String())
	writeFile(t, filepath.Join(r.RepoDir, "Packages"), packages, 0o644)
	sum := sha256.Sum256(packages)
	md := md5.Sum(packages)
	release := fmt.Sprintf("Origin: gpuform-test\nLabel: gpuform-test\nSuite: gpuform-test\nCodename: gpuform-test\nDate: %s\nArchitectures: amd64 arm64 all\nDescription: packages with NVIDIA's names built by gpuform's tests\nMD5Sum:\n %s %d Packages\nSHA256:\n %s %d Packages\n",
		time.Now().UTC().Format(time.RFC1123), hex.EncodeToString(md[:]), len(packages), hex.EncodeToString(sum[:]), len(packages))
	writeFile(t, filepath.Join(r.RepoDir, "Release"), []byte(release), 0o644)
}

// builtDebs holds the packages this test process has built, by what went
// into them: every root of a run publishes much the same NVIDIA repository
// (NVIDIARepo is 35 packages), and running dpkg-deb for each of them again
// in each of a package's roots cost seconds per test. The files are small
// (no compression, a few marker files each).
var builtDebs struct {
	mu   sync.Mutex
	byID map[[32]byte]*builtDeb
}

// builtDeb is one package's file; mu is held while it is built, so roots
// starting at once build it once.
type builtDeb struct {
	mu   sync.Mutex
	data []byte
}

// id identifies everything buildDeb puts into d's package.
func (d Deb) id() [32]byte {
	h := sha256.New()
	fmt.Fprintf(h, "%q %q %q\n", d.Name, d.Version, d.control())
	fmt.Fprintf(h, "postinst %q\n", d.Postinst)
	paths := make([]string, 0, len(d.Files))
	for p := range d.Files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		fmt.Fprintf(h, "file %q %q\n", p, d.Files[p])
	}
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	return sum
}

// writeDeb writes d's package to out: a copy of the one built before in
// this process for the same d, else a new build.
func writeDeb(t testing.TB, d Deb, out string) {
	t.Helper()
	id := d.id()
	builtDebs.mu.Lock()
	if builtDebs.byID == nil {
		builtDebs.byID = map[[32]byte]*builtDeb{}
	}
	e := builtDebs.byID[id]
	if e == nil {
		e = &builtDeb{}
		builtDebs.byID[id] = e
	}
	builtDebs.mu.Unlock()
	// A build that fails the test leaves data nil (Fatal unwinds through
	// the deferred Unlock) and the next root builds it again.
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.data != nil {
		writeFile(t, out, e.data, 0o644)
		return
	}
	buildDeb(t, d, out)
	b, err := os.ReadFile(out)
	must(t, err)
	e.data = b
}

// buildDeb runs dpkg-deb on a staging tree for d.
func buildDeb(t testing.TB, d Deb, out string) {
	t.Helper()
	stage, err := os.MkdirTemp(filepath.Dir(out), ".stage-")
	must(t, err)
	defer os.RemoveAll(stage)
	writeFile(t, filepath.Join(stage, "DEBIAN/control"), []byte(d.control()), 0o644)
	if d.Postinst != "" {
		writeFile(t, filepath.Join(stage, "DEBIAN/postinst"), []byte(d.Postinst), 0o755)
	}
	writeFile(t, filepath.Join(stage, "usr/share/gpuform-test", d.Name), []byte(d.Version+"\n"), 0o644)
	for p, content := range d.Files {
		writeFile(t, filepath.Join(stage, p), []byte(content), 0o644)
	}
	cmd := exec.Command("dpkg-deb", "--root-owner-group", "-Znone", "--build", stage, out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("debroot: dpkg-deb for %s %s: %v\n%s", d.Name, d.Version, err, b)
	}
}
