package main

import (
	"archive/tar"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/internal/debroot"
	"github.com/gpuform/gpuform/internal/jsonformat"
	"github.com/gpuform/gpuform/provision/bundle"
)

// startOfflineNode is startAptNode (or startRPMNode) on a root in a
// network namespace of its own with only loopback: no route anywhere,
// gpuform's SSH connection its only way in. The test checks that it is so
// before it goes on, from the namespace's own route table.
func startOfflineNode(t *testing.T, rpm bool) *aptNode {
	t.Helper()
	opts := debroot.Options{Packages: debroot.NVIDIARepo(), Offline: true}
	if rpm {
		opts = debroot.Options{RPM: true, RPMs: debroot.NVIDIARPMs(), Offline: true}
	}
	a := startRootNode(t, opts)
	r := a.root
	if routes, ifaces := r.Routes(t); len(routes) != 0 || strings.Join(ifaces, " ") != "lo" {
		t.Fatalf("the offline root has routes %q and interfaces %q, want none and lo", routes, ifaces)
	}
	// A connection out fails at once: no route (the kernel's word).
	out, _ := r.Exec(`perl -MIO::Socket::INET -e 'IO::Socket::INET->new(PeerAddr => "192.0.2.1:80", Timeout => 3) or die "$!\n"' 2>&1`)
	if !strings.Contains(out, "Network is unreachable") {
		t.Fatalf("a connection out of the offline root: %q, want Network is unreachable", out)
	}
	return a
}

// removeSources takes the node's own package sources away: the file
// naming the test repository, and the repository itself (a bind mount of
// RepoDir, emptied from outside). Only the bundle is left to install from.
func removeSources(t *testing.T, a *aptNode, script string) {
	t.Helper()
	a.root.Run(t, script)
	ents, err := os.ReadDir(a.root.RepoDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if err := os.RemoveAll(filepath.Join(a.root.RepoDir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	if out := a.root.Run(t, "ls -A /srv/gpuform-repo"); strings.TrimSpace(out) != "" {
		t.Fatalf("the node's repository is still there: %s", out)
	}
}

// TestBundleFromTheTestRepository builds a bundle of NCCL from a Debian
// root's repository: the host's apt resolves libnccl-dev with the
// libnccl2 it depends on at exactly its version; the manifest lists both
// with their source and the lock entry each satisfies, and the repository
// is signed with the bundle's key (gpgv, as apt checks it). The root is
// offline throughout (its network namespace has no route), and its own
// sources go before plan and apply -bundle.
func TestBundleFromTheTestRepository(t *testing.T) {
	t.Parallel()
	a := startOfflineNode(t, false)
	a.spec(`  nccl { version = "2.21.5" }`)
	out := filepath.Join(t.TempDir(), "bundle")
	code, stdout, errOut := a.cli("", "bundle", "-out", out)
	if code != ExitOK {
		t.Fatalf("bundle: exit %d\n%s\n%s", code, stdout, errOut)
	}
	m, err := bundle.ReadManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Verify(out, ""); err != nil {
		t.Fatal(err)
	}
	if len(m.Repos) != 1 {
		t.Fatalf("repos = %+v", m.Repos)
	}
	r := m.Repos[0]
	var got []string
	for _, p := range r.Packages {
		got = append(got, p.Name+"="+p.Version)
	}
	want := "libnccl-dev=2.21.5-1+cuda12.4 libnccl2=2.21.5-1+cuda12.4"
	if strings.Join(got, " ") != want || r.OS != "debian 12" || r.Node != "n" {
		t.Errorf("repository %s: %s packages %v, want %s", r.Dir, r.OS, got, want)
	}
	f, ok := m.File(r.Dir + "/libnccl2_2.21.5-1+cuda12.4_amd64.deb")
	if !ok || !strings.HasPrefix(f.Source, "file:/srv/gpuform-repo") || !strings.Contains(f.Satisfies, "node n: nccl libnccl2=2.21.5-1+cuda12.4") {
		t.Errorf("libnccl2's entry: %+v", f)
	}
	if !strings.Contains(stdout, `node "n" on debian 12`) || !strings.Contains(stdout, "Wrote the bundle") {
		t.Errorf("bundle's output:\n%s", stdout)
	}
	if b, err := os.ReadFile(filepath.Join(out, r.Dir, "InRelease")); err != nil || !strings.Contains(string(b), "BEGIN PGP SIGNED MESSAGE") {
		t.Errorf("InRelease: %v\n%s", err, b)
	}

	// bundle -check: closed as built; with libnccl2 left out (the index
	// rewritten and signed again, so only apt's solver can tell), apt
	// names the missing dependency and the check fails.
	if code, stdout, errOut := runCLI(t, "", "bundle", "-check", out); code != ExitOK || !strings.Contains(stdout, "is closed") {
		t.Errorf("bundle -check: exit %d\n%s\n%s", code, stdout, errOut)
	}
	open := leaveOut(t, out, "libnccl2")
	if code, stdout, errOut := runCLI(t, "", "bundle", "-check", open); code != ExitFailed || !strings.Contains(stdout, "libnccl-dev : Depends: libnccl2 (= 2.21.5-1+cuda12.4) but it is not installable") {
		t.Errorf("bundle -check of a bundle without libnccl2: exit %d\n%s\n%s", code, stdout, errOut)
	}
	code, stdout, errOut = runCLI(t, "", "bundle", "-check", open, "-format", "json")
	var check bundleCheckDocument
	if code != ExitFailed || json.Unmarshal([]byte(stdout), &check) != nil {
		t.Fatalf("bundle -check -format json of a bundle without libnccl2: exit %d\n%s\n%s", code, stdout, errOut)
	}
	wantCheck := bundleCheckDocument{FormatVersion: jsonformat.Version, Bundle: open, Closed: false, Repos: []bundleCheckRepoJSON{{
		Node: "n", Family: "debian", OS: "debian 12", Arch: r.Arch, Dir: r.Dir, Closed: false, Releases: 1,
		Problems: []string{"libnccl-dev : Depends: libnccl2 (= 2.21.5-1+cuda12.4) but it is not installable"},
	}}}
	if d := cmp.Diff(wantCheck, check); d != "" {
		t.Errorf("bundle -check -format json (-want +got):\n%s", d)
	}

	// The same bundle as a tarball: its manifest lists the same package
	// files with the same hashes (the index and its signature are
	// dated, and the key is new); it is checked closed and is what apply
	// installs from below.
	tarball := filepath.Join(t.TempDir(), "bundle.tar.gz")
	code, stdout, errOut = a.cli("", "bundle", "-out", tarball, "-format", "json")
	var doc bundleDocument
	if code != ExitOK || json.Unmarshal([]byte(stdout), &doc) != nil {
		t.Fatalf("bundle -out %s -format json: exit %d\n%s\n%s", tarball, code, stdout, errOut)
	}
	if doc.Bundle != tarball || len(doc.Repos) != 1 || doc.Repos[0].Packages != 2 || doc.Repos[0].Dir != r.Dir || doc.Bytes == 0 {
		t.Errorf("bundle -format json: %+v", doc)
	}
	if ents, _ := os.ReadDir(filepath.Dir(tarball)); len(ents) != 1 {
		t.Errorf("bundle -out a tarball left %d entries beside it", len(ents)-1)
	}
	ext := t.TempDir()
	if err := bundle.ExtractArchive(tarball, ext); err != nil {
		t.Fatal(err)
	}
	tm, err := bundle.ReadManifest(ext)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(packageFiles(m), packageFiles(tm)); d != "" {
		t.Errorf("the tarball's package files (-directory +tarball):\n%s", d)
	}
	if code, stdout, errOut := runCLI(t, "", "bundle", "-check", tarball); code != ExitOK || !strings.Contains(stdout, "is closed") {
		t.Errorf("bundle -check of the tarball: exit %d\n%s\n%s", code, stdout, errOut)
	}
	// A tarball with an entry outside the bundle is refused before any
	// host is asked.
	evil := filepath.Join(t.TempDir(), "evil.tar")
	writeEvilTar(t, evil, filepath.Join(out, bundle.ManifestName))
	if code, stdout, errOut := a.cli("", "apply", "-auto-approve", "-bundle", evil); code == ExitOK || !strings.Contains(errOut, `"../escaped" is not a plain relative path`) {
		t.Errorf("apply -bundle of a tarball with ../: exit %d\n%s\n%s", code, stdout, errOut)
	}
	if _, err := os.Stat(filepath.Join(os.TempDir(), "escaped")); err == nil {
		t.Errorf("the tarball wrote outside its directory")
	}

	// The node loses its own sources and lists; plan -bundle resolves the
	// release from the bundle.
	removeSources(t, a, "rm -f /etc/apt/sources.list.d/gpuform-test.list && rm -rf /var/lib/apt/lists/* && mkdir -p /var/lib/apt/lists/partial")
	code, stdout, errOut = a.cli("", "plan", "-bundle", out, "-detailed-exitcode")
	if code != ExitReport || !strings.Contains(stdout, "nccl") || !strings.Contains(errOut, "Bundle: apply copies "+r.Dir+" to debroot:/var/lib/gpuform/bundle/ (6 files") {
		t.Errorf("plan -bundle: exit %d\n%s\n%s", code, stdout, errOut)
	}
	// A release the bundle lacks fails the host's plan, naming the bundle.
	a.spec(`  nccl { version = "2.20.5" }`)
	code, stdout, errOut = a.cli("", "plan", "-bundle", out)
	if code == ExitOK || !strings.Contains(stdout+errOut, "bundle "+out) {
		t.Errorf("plan -bundle of a release it lacks: exit %d\n%s\n%s", code, stdout, errOut)
	}
	a.spec(`  nccl { version = "2.21.5" }`)
	// A lock file the bundle was not built for is refused, naming both.
	writeFile(t, filepath.Join(a.dir, ".gpuform.lock.hcl"), "")
	if code, stdout, errOut := a.cli("", "plan", "-bundle", out); code == ExitOK || !strings.Contains(errOut, "was built for another lock file") {
		t.Errorf("plan -bundle with another lock: exit %d\n%s\n%s", code, stdout, errOut)
	}
	os.Remove(filepath.Join(a.dir, ".gpuform.lock.hcl"))
	// A tampered package is refused by its hash before any host is
	// asked, and apply installs nothing.
	deb := filepath.Join(out, r.Dir, "libnccl2_2.21.5-1+cuda12.4_amd64.deb")
	good, err := os.ReadFile(deb)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(deb, []byte("not the package"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, stdout, errOut := a.cli("", "apply", "-auto-approve", "-bundle", out); code == ExitOK || !strings.Contains(errOut, "does not match the bundle's manifest") || !strings.Contains(errOut, "libnccl2_2.21.5-1+cuda12.4_amd64.deb") {
		t.Errorf("apply -bundle with a tampered file: exit %d\n%s\n%s", code, stdout, errOut)
	}
	if got := a.dpkg(); strings.TrimSpace(got) != "" {
		t.Errorf("a refused bundle installed:\n%s", got)
	}
	if err := os.WriteFile(deb, good, 0o644); err != nil {
		t.Fatal(err)
	}
	// The node's apt.conf.d names sources of its own (a site mirror, out
	// of reach), which apt reads after APT_CONFIG: the bundle's
	// transaction still reads only the bundle, and the node's files stay.
	site := `Dir::Etc::SourceParts "/etc/apt/site.d";`
	a.root.Run(t, "mkdir -p /etc/apt/site.d && echo 'deb [trusted=yes] file:/srv/no-such-mirror ./' >/etc/apt/site.d/mirror.list && echo '"+site+"' >/etc/apt/apt.conf.d/99site-mirror")
	if out, err := a.root.Exec("apt-get update -q 2>&1"); err == nil {
		t.Fatalf("the node's apt read a mirror that is not there: %s", out)
	}
	// apt's binary caches of the node's own lists are not rewritten
	// from the bundle's.
	caches := "sha256sum /var/cache/apt/pkgcache.bin /var/cache/apt/srcpkgcache.bin 2>/dev/null || true"
	a.root.Run(t, "apt-cache policy >/dev/null 2>&1 || true")
	cachesBefore := a.root.Run(t, caches)
	// apply -bundle of the tarball converges from the bundle alone; the
	// node's apt configuration names no source afterwards, and a second
	// plan is empty.
	code, stdout, errOut = a.cli("", "apply", "-auto-approve", "-bundle", tarball)
	if code != ExitOK {
		t.Fatalf("apply -bundle: exit %d\n%s\n%s", code, stdout, errOut)
	}
	if got := a.root.Run(t, "cat /etc/apt/apt.conf.d/99site-mirror"); strings.TrimSpace(got) != site {
		t.Errorf("the node's apt.conf.d/99site-mirror after apply -bundle: %q", got)
	}
	a.root.Run(t, "rm -r /etc/apt/site.d /etc/apt/apt.conf.d/99site-mirror")
	if got := a.root.Run(t, caches); got != cachesBefore {
		t.Errorf("apply -bundle rewrote the node's apt caches:\n%s\nwas\n%s", got, cachesBefore)
	}
	a.converged([]string{"libnccl2 2.21.5-1+cuda12.4", "libnccl-dev 2.21.5-1+cuda12.4"}, []string{"libnccl-dev", "libnccl2"})
	if got := a.root.Run(t, "ls /etc/apt/sources.list.d; cat /etc/apt/sources.list 2>/dev/null || true"); strings.TrimSpace(got) != "" {
		t.Errorf("the node's apt sources after apply -bundle:\n%s", got)
	}
	if code, stdout, errOut := a.cli("", "plan", "-bundle", tarball, "-detailed-exitcode"); code != ExitOK || !strings.Contains(stdout, "No changes.") {
		t.Errorf("second plan -bundle: exit %d\n%s\n%s", code, stdout, errOut)
	}
	// A second apply copies nothing: there is nothing to do.
	if strings.Contains(a.apply(), "files copied") {
		t.Errorf("a converged apply staged the bundle")
	}
}

// leaveOut copies the bundle at dir without the package name: its file,
// its record in the index, its manifest entries and its wanted release
// gone, the index signed
// again with a new key, as a bundle tool that missed a dependency would
// have written it.
func leaveOut(t *testing.T, dir, name string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "open")
	if b, err := exec.Command("cp", "-a", dir, out).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, b)
	}
	m, err := bundle.ReadManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	r := &m.Repos[0]
	repoDir := filepath.Join(out, r.Dir)
	idx, err := os.ReadFile(filepath.Join(repoDir, "Packages"))
	if err != nil {
		t.Fatal(err)
	}
	var records []bundle.AptRecord
	for _, para := range strings.Split(strings.TrimSpace(string(idx)), "\n\n") {
		var rec bundle.AptRecord
		for _, l := range strings.Split(para, "\n") {
			k, v, _ := strings.Cut(l, ": ")
			switch k {
			case "Package":
				rec.Name = v
			case "Version":
				rec.Version = v
			case "Filename":
				rec.File = strings.TrimPrefix(v, "./")
			}
		}
		rec.Control = para + "\n"
		if rec.Name == name {
			os.Remove(filepath.Join(repoDir, rec.File))
			m.Files = slices.DeleteFunc(m.Files, func(f bundle.File) bool { return f.Path == r.Dir+"/"+rec.File })
			continue
		}
		records = append(records, rec)
	}
	r.Packages = slices.DeleteFunc(r.Packages, func(p bundle.Package) bool { return p.Name == name })
	// Only another release's dependency now: no release it was built for
	// names it.
	r.Wanted = slices.DeleteFunc(r.Wanted, func(w string) bool { return strings.HasPrefix(w, name+"=") })
	if err := bundle.WriteAptIndex(repoDir, records, time.Now()); err != nil {
		t.Fatal(err)
	}
	signer, err := bundle.NewSigner(context.Background(), t.TempDir(), out)
	if err != nil {
		t.Fatal(err)
	}
	defer signer.Close()
	if err := signer.SignRelease(context.Background(), repoDir); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{bundle.KeyFile, r.Dir + "/Packages", r.Dir + "/Release", r.Dir + "/InRelease"} {
		if err := m.AddFile(out, f, "gpuform", ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := bundle.WriteManifest(out, m); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestBundleDnf is the bundle on the Rocky-9-like dnf root: dnf download
// --resolve and createrepo_c on the host build the repository; with the
// host's own repository file and dnf's cache removed, apply -bundle
// installs libnccl-devel and the libnccl it requires from the bundle
// alone, /etc/yum.repos.d stays empty and a second plan -bundle is empty.
// The root is offline throughout, and its repository goes with its file.
func TestBundleDnf(t *testing.T) {
	t.Parallel()
	a := startOfflineNode(t, true)
	a.spec(`  nccl { version = "2.21.5-1+cuda12.4" }`)
	out := filepath.Join(t.TempDir(), "bundle")
	// dnf's cache was never filled: the releases cannot be resolved, and
	// bundle says so instead of writing an empty bundle.
	if code, stdout, errOut := a.cli("", "bundle", "-out", out); code != ExitFailed || !strings.Contains(errOut, "dnf makecache") {
		t.Errorf("bundle with dnf's cache empty: exit %d\n%s\n%s", code, stdout, errOut)
	}
	a.root.Run(t, "dnf -q makecache")
	os.RemoveAll(out)
	code, stdout, errOut := a.cli("", "bundle", "-out", out)
	if code != ExitOK {
		t.Fatalf("bundle: exit %d\n%s\n%s", code, stdout, errOut)
	}
	m, err := bundle.ReadManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Repos) != 1 || m.Repos[0].Family != "rhel" || m.Repos[0].OS != "rocky 9.4" || len(m.Repos[0].Packages) != 2 {
		t.Fatalf("repos: %+v", m.Repos)
	}
	removeSources(t, a, "rm -f /etc/yum.repos.d/gpuform-test.repo && rm -rf /var/cache/dnf/*")
	if b, err := os.ReadFile(filepath.Join(out, m.Repos[0].Dir, bundle.RepomdSignature)); err != nil || !strings.Contains(string(b), "BEGIN PGP SIGNATURE") {
		t.Errorf("the dnf repository's metadata signature: %v\n%s", err, b)
	}
	// A repository whose metadata is signed by another key than the
	// bundle's (the manifest made to match, so only dnf's check of the
	// signature can tell) is refused by the node's dnf: nothing is
	// installed, and no repository file is left naming it.
	forged := filepath.Join(t.TempDir(), "forged")
	if b, err := exec.Command("cp", "-a", out, forged).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, b)
	}
	resignDnf(t, forged, m.Repos[0].Dir, false)
	code, stdout, errOut = a.cli("", "apply", "-auto-approve", "-bundle", forged)
	if code != ExitFailed || !strings.Contains(stdout+errOut, "GPG signature verification error") || !strings.Contains(stdout+errOut, "dnf cannot read the bundle's repository") {
		t.Errorf("apply -bundle of a repository signed by another key: exit %d\n%s\n%s", code, stdout, errOut)
	}
	if got := a.root.Run(t, "rpm -qa 'libnccl*'; ls /var/lib/gpuform/bundle/*/repos.d"); strings.TrimSpace(got) != "" {
		t.Errorf("a refused repository left behind:\n%s", got)
	}
	// dnf.conf may define repositories of its own besides [main] (a
	// site mirror, unreachable here): the bundle's transaction reads none
	// of them, nor any a plugin adds, and the node's dnf.conf stays as
	// it was.
	mirror := "\n[site-mirror]\nname=a site mirror out of reach\nbaseurl=file:///srv/no-such-mirror\nenabled=1\ngpgcheck=0\nskip_if_unavailable=0\n"
	a.root.Run(t, "cp /etc/dnf/dnf.conf /etc/dnf/dnf.conf.orig && printf '"+strings.ReplaceAll(mirror, "\n", `\n`)+"' >>/etc/dnf/dnf.conf")
	if out, err := a.root.Exec("dnf -q makecache 2>&1"); err == nil {
		t.Fatalf("the node's dnf read a mirror that is not there: %s", out)
	}
	code, stdout, errOut = a.cli("", "apply", "-auto-approve", "-bundle", out)
	if code != ExitOK {
		t.Fatalf("apply -bundle: exit %d\n%s\n%s", code, stdout, errOut)
	}
	if got, want := a.root.Run(t, "cat /etc/dnf/dnf.conf"), a.root.Run(t, "cat /etc/dnf/dnf.conf.orig")+mirror; got != want {
		t.Errorf("the node's dnf.conf after apply -bundle (-want +got):\n%s", cmp.Diff(want, got))
	}
	a.rpmConverged([]string{"libnccl 2.21.5-1+cuda12.4", "libnccl-devel 2.21.5-1+cuda12.4"}, []string{"libnccl", "libnccl-devel"})
	if got := a.root.Run(t, "ls /etc/yum.repos.d"); strings.TrimSpace(got) != "" {
		t.Errorf("/etc/yum.repos.d after apply -bundle: %s", got)
	}
	if code, stdout, errOut := a.cli("", "plan", "-bundle", out, "-detailed-exitcode"); code != ExitOK {
		t.Errorf("second plan -bundle: exit %d\n%s\n%s", code, stdout, errOut)
	}
	checkDnfBundle(t, a, out)
}

// checkDnfBundle is bundle -check of TestBundleDnf's bundle, by the dnf
// and rpm of the Rocky-like root (this machine may have none) with the
// network disabled around them: closed as built, installing both
// packages; with libnccl left out (its file gone, the metadata written
// again by createrepo_c, so only dnf's solver can tell), dnf names the
// dependency libnccl-devel lacks.
func checkDnfBundle(t *testing.T, a *aptNode, out string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(out, "repos/n-rocky-9.4-x86_64", bundle.BaseRPMDB)); err != nil {
		t.Fatalf("the bundle has no rpm database of the host: %v", err)
	}
	tools := bundle.Tools{Prefix: a.root.Enter(t), Path: func(p string) string { return a.root.RepoPath(t, p) }}
	check := func(name string, edit func(dir string, r *bundle.Repo)) *bundle.CheckResult {
		t.Helper()
		dir := filepath.Join(a.root.RepoDir, name)
		if b, err := exec.Command("cp", "-a", out, dir).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v\n%s", err, b)
		}
		m, err := bundle.ReadManifest(dir)
		if err != nil {
			t.Fatal(err)
		}
		r := &m.Repos[0]
		edit(dir, r)
		tmp := filepath.Join(a.root.RepoDir, strings.ReplaceAll(name, " ", "-")+"-tmp")
		if err := os.Mkdir(tmp, 0o755); err != nil {
			t.Fatal(err)
		}
		res, err := bundle.CheckDnf(context.Background(), dir, r, tmp, tools)
		if err != nil {
			t.Fatalf("CheckDnf of %s: %v", name, err)
		}
		return res
	}
	if res := check("closed", func(string, *bundle.Repo) {}); len(res.Problems) != 0 || res.Installs != 2 {
		t.Errorf("CheckDnf of the bundle as built: problems %q, %d installs, want none and 2", res.Problems, res.Installs)
	}
	if res := check("my bundles", func(string, *bundle.Repo) {}); len(res.Problems) != 0 || res.Installs != 2 {
		t.Errorf("CheckDnf of the bundle in a path with a space: problems %q, %d installs, want none and 2", res.Problems, res.Installs)
	}
	res := check("open", func(dir string, r *bundle.Repo) {
		a.root.Run(t, "cd "+a.root.RepoPath(t, filepath.Join(dir, r.Dir))+" && rm libnccl-2.21.5-1+cuda12.4.noarch.rpm && rm -r repodata && createrepo_c --quiet .")
		resignDnf(t, dir, r.Dir, true)
		r.Wanted = slices.DeleteFunc(r.Wanted, func(w string) bool { return strings.HasPrefix(w, "libnccl=") })
	})
	want := []string{"nothing provides libnccl = 2.21.5-1+cuda12.4 needed by libnccl-devel-2.21.5-1+cuda12.4.noarch"}
	if !slices.Equal(res.Problems, want) {
		t.Errorf("CheckDnf without libnccl: problems %q, want %q", res.Problems, want)
	}
	// Metadata signed by another key than the bundle's does not check.
	forged := filepath.Join(a.root.RepoDir, "forged")
	if b, err := exec.Command("cp", "-a", out, forged).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, b)
	}
	m, err := bundle.ReadManifest(forged)
	if err != nil {
		t.Fatal(err)
	}
	resignDnf(t, forged, m.Repos[0].Dir, false)
	if _, err := bundle.CheckDnf(context.Background(), forged, &m.Repos[0], a.root.RepoDir, tools); err == nil || !strings.Contains(err.Error(), "GPG signature verification error") {
		t.Errorf("CheckDnf of metadata signed by another key: %v", err)
	}
	// The CLI checks with this machine's dnf: it runs it, or names what
	// it lacks.
	code, stdout, errOut := runCLI(t, "", "bundle", "-check", out)
	if _, err := exec.LookPath("dnf"); err != nil {
		if code != ExitFailed || !strings.Contains(errOut, "needs dnf and rpm on this machine") {
			t.Errorf("bundle -check of a dnf bundle without dnf here: exit %d\n%s\n%s", code, stdout, errOut)
		}
	} else if code != ExitOK || !strings.Contains(stdout, "is closed") {
		t.Errorf("bundle -check of a dnf bundle: exit %d\n%s\n%s", code, stdout, errOut)
	}
}

// resignDnf signs the dnf repository rel of the bundle at dir again with
// a new key, which replaces the bundle's key when asKey (as a bundle tool
// would have written it), else is a forger's, the bundle's key kept; the
// manifest is made to match either way.
func resignDnf(t *testing.T, dir, rel string, asKey bool) {
	t.Helper()
	keyDir := t.TempDir()
	if asKey {
		keyDir = dir
	}
	signer, err := bundle.NewSigner(context.Background(), t.TempDir(), keyDir)
	if err != nil {
		t.Fatal(err)
	}
	defer signer.Close()
	if err := signer.SignRepomd(context.Background(), filepath.Join(dir, rel)); err != nil {
		t.Fatal(err)
	}
	m, err := bundle.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{bundle.KeyFile, rel + "/" + bundle.RepomdSignature} {
		if err := m.AddFile(dir, f, "gpuform", ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := bundle.WriteManifest(dir, m); err != nil {
		t.Fatal(err)
	}
}

// packageFiles are a bundle's package files with their hashes.
func packageFiles(m *bundle.Manifest) map[string]string {
	out := map[string]string{}
	for _, f := range m.Files {
		if strings.HasSuffix(f.Path, ".deb") || strings.HasSuffix(f.Path, ".rpm") {
			out[f.Path] = f.SHA256
		}
	}
	return out
}

// writeEvilTar writes a tarball that starts as a bundle's (its real
// manifest) and then holds ../escaped.
func writeEvilTar(t *testing.T, dest, manifest string) {
	t.Helper()
	b, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(dest)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	for _, e := range []struct {
		name string
		body []byte
	}{{bundle.ManifestName, b}, {"../escaped", []byte("x")}} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: e.name, Mode: 0o644, Size: int64(len(e.body))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(e.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
}
