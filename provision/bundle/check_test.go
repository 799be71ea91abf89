package bundle

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuform/gpuform/internal/sshtest"
)

// aptCheckBundle writes a real, signed one-package apt bundle in a new
// directory (a package made with dpkg-deb, the index WriteAptIndex
// writes, the InRelease gpg signs) whose repository wants wanted.
func aptCheckBundle(t *testing.T, wanted []string) string {
	t.Helper()
	for _, tool := range []string{"apt-get", "dpkg-deb", "gpg", "unshare"} {
		if _, err := exec.LookPath(tool); err != nil {
			sshtest.Missing(t, tool+" is not installed (scripts/test.sh installs apt, dpkg and gnupg)")
		}
	}
	dir := t.TempDir()
	rel := "repos/n-debian-12-amd64"
	repo := filepath.Join(dir, rel)
	pkg := filepath.Join(t.TempDir(), "pkg")
	if err := os.MkdirAll(filepath.Join(pkg, "DEBIAN"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	control := "Package: gpuform-x\nVersion: 1.0\nArchitecture: all\nMaintainer: gpuform <t@gpuform.invalid>\nDescription: a test package\n"
	if err := os.WriteFile(filepath.Join(pkg, "DEBIAN", "control"), []byte(control), 0o644); err != nil {
		t.Fatal(err)
	}
	deb := "gpuform-x_1.0_all.deb"
	if b, err := exec.Command("dpkg-deb", "--build", pkg, filepath.Join(repo, deb)).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb: %v\n%s", err, b)
	}
	b, err := os.ReadFile(filepath.Join(repo, deb))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	record := fmt.Sprintf("%sFilename: %s\nSize: %d\nSHA256: %s\n", control, deb, len(b), hex.EncodeToString(sum[:]))
	if err := WriteAptIndex(repo, []AptRecord{{Name: "gpuform-x", Version: "1.0", Control: record, File: deb}}, time.Now()); err != nil {
		t.Fatal(err)
	}
	signer, err := NewSigner(context.Background(), t.TempDir(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer signer.Close()
	if err := signer.SignRelease(context.Background(), repo); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, BaseStatus), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	m := &Manifest{Repos: []Repo{{Node: "n", Family: "debian", OS: "debian 12", Arch: "amd64", Dir: rel, Wanted: wanted,
		Packages: []Package{{Name: "gpuform-x", Version: "1.0", File: rel + "/" + deb}}}}}
	for _, f := range []string{KeyFile, rel + "/" + deb, rel + "/" + BaseStatus, rel + "/Packages", rel + "/Release", rel + "/InRelease"} {
		if err := m.AddFile(dir, f, "gpuform", ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := WriteManifest(dir, m); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestCheckRunsNoOptionFromTheManifest: a manifest is the bundle author's
// text and is not signed, so a wanted release written as an option
// ("-oAPT::Get::Simulate=false", "-oDPkg::Pre-Invoke::=…") must never
// reach bundle -check's apt-get (or dnf) as one: apt would run the
// author's command on the machine that checks the bundle, as its user,
// before anyone decided to trust the bundle. ReadManifest refuses such a
// release, naming it; were it read, the real apt's check must not run
// the command.
func TestCheckRunsNoOptionFromTheManifest(t *testing.T) {
	t.Parallel()
	marker := filepath.Join(t.TempDir(), "ran")
	evil := []string{"gpuform-x=1.0", "-oAPT::Get::Simulate=false", "-oDPkg::Pre-Invoke::=touch " + marker + "; false"}
	dir := aptCheckBundle(t, evil)
	m, err := ReadManifest(dir)
	if err == nil {
		_, cerr := CheckApt(context.Background(), dir, &m.Repos[0], t.TempDir())
		if _, serr := os.Stat(marker); serr == nil {
			t.Errorf("bundle -check ran a command the manifest named (CheckApt: %v)", cerr)
		}
		t.Fatalf("ReadManifest of a wanted release %q took it", evil[1])
	}
	if !strings.Contains(err.Error(), `"-oAPT::Get::Simulate=false"`) {
		t.Errorf("ReadManifest = %v, want the release named", err)
	}
	// The same bundle wanting only its package reads and checks closed.
	dir = aptCheckBundle(t, evil[:1])
	m, err = ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	res, err := CheckApt(context.Background(), dir, &m.Repos[0], t.TempDir())
	if err != nil || len(res.Problems) != 0 || res.Installs != 1 {
		t.Fatalf("CheckApt of the plain bundle = %+v, %v; want closed with 1 install", res, err)
	}
}

// TestCheckAptFailsClosedOnSignature: bundle -check's apt reads no
// repository whose index is unsigned or signed by another key than the
// bundle's: the check fails, it does not report the repository closed.
func TestCheckAptFailsClosedOnSignature(t *testing.T) {
	t.Parallel()
	for name, edit := range map[string]func(t *testing.T, dir, repo string){
		"unsigned": func(t *testing.T, _, repo string) {
			if err := os.Remove(filepath.Join(repo, "InRelease")); err != nil {
				t.Fatal(err)
			}
		},
		"another key": func(t *testing.T, _, repo string) {
			signer, err := NewSigner(context.Background(), t.TempDir(), t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer signer.Close()
			if err := signer.SignRelease(context.Background(), repo); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := aptCheckBundle(t, []string{"gpuform-x=1.0"})
			m, err := ReadManifest(dir)
			if err != nil {
				t.Fatal(err)
			}
			edit(t, dir, filepath.Join(dir, m.Repos[0].Dir))
			res, err := CheckApt(context.Background(), dir, &m.Repos[0], t.TempDir())
			if err == nil {
				t.Fatalf("CheckApt of a repository %s = %+v, want an error", name, res)
			}
			if !strings.Contains(err.Error(), "reading the repository") {
				t.Errorf("CheckApt = %v, want apt's reading of the repository to fail", err)
			}
		})
	}
}

// TestCheckAptBundleInAPathWithASpace: a bundle kept in "my bundles/"
// checks closed; its path went into the scratch root's sources.list as it
// was, and apt refused the line ("Malformed entry 1 ... [option] not
// assignment").
func TestCheckAptBundleInAPathWithASpace(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "my bundles")
	if err := os.Rename(aptCheckBundle(t, []string{"gpuform-x=1.0"}), dir); err != nil {
		t.Fatal(err)
	}
	m, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	res, err := CheckApt(context.Background(), dir, &m.Repos[0], t.TempDir())
	if err != nil || len(res.Problems) != 0 || res.Installs != 1 {
		t.Fatalf("CheckApt of a bundle in %q = %+v, %v; want closed with 1 install", dir, res, err)
	}
}
