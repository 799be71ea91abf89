package main

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpuform/gpuform/internal/readlimit"
	"github.com/gpuform/gpuform/provision/apply"
	"github.com/gpuform/gpuform/provision/bundle"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/plan"
	"github.com/gpuform/gpuform/provision/registry"
	"github.com/gpuform/gpuform/provision/resource"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/transport"
	"github.com/gpuform/gpuform/spec"
)

// bundleArguments are the arguments of gpuform bundle.
type bundleArguments struct {
	// Dir is the spec directory, "." when omitted.
	Dir string
	// Spec are -var and -var-file.
	Spec specFlags
	// Conn are the connection flags and -probe-timeout.
	Conn connectFlags
	// Targets are the -target hosts the packages are resolved on.
	Targets []string
	// Out is -out: the bundle directory to make, or a tarball (.tar,
	// .tar.gz, .tgz).
	Out string
	// Check is -check: the bundle to prove closed, instead of making one.
	Check string
	// Format is -format: text or json (-json is -format json).
	Format string
	json   bool
}

func (a *bundleArguments) register(fs *pflag.FlagSet) {
	a.Spec.register(fs)
	a.Conn.register(fs)
	a.Conn.timeouts.registerProbe(fs)
	fs.StringArrayVar(&a.Targets, "target", nil, "resolve the packages on these hosts only (repeatable; ranges allowed)")
	fs.StringVar(&a.Out, "out", "", "the bundle directory to make (must not exist, or be empty), or a tarball BUNDLE.tar or BUNDLE.tar.gz (must not exist)")
	fs.StringVar(&a.Format, "format", "text", "output format: text or json")
	fs.BoolVar(&a.json, "json", false, "print the result as JSON (-format json)")
	fs.StringVar(&a.Check, "check", "", "prove the bundle BUNDLE closed: install each repository, simulated by this machine's apt or dnf with the network disabled, onto the package set it was resolved against; exit 1 on a missing dependency")
}

func (a *bundleArguments) finish(_ *pflag.FlagSet, args []string) error {
	a.Dir = dirArg(args)
	if a.json {
		a.Format = "json"
	}
	if a.Format != "text" && a.Format != "json" {
		return fmt.Errorf("-format must be text or json, not %q", a.Format)
	}
	if a.Check != "" {
		if a.Out != "" {
			return fmt.Errorf("-check and -out: check a bundle, or make one")
		}
		return nil
	}
	if a.Out == "" {
		return fmt.Errorf("gpuform bundle needs -out BUNDLE, the directory (or BUNDLE.tar, BUNDLE.tar.gz) to make")
	}
	return nil
}

func newBundleCommand(s Streams) *cobra.Command {
	a := &bundleArguments{}
	cmd := &cobra.Command{
		Use:         "bundle [DIR] -out BUNDLE",
		Annotations: graceful(),
		Short:       "Build an offline bundle of the packages the plan installs, for air-gapped sites",
		Long: `Bundle makes BUNDLE, a directory that apply -bundle installs from with no
network: for every node block and each OS release and architecture its
hosts run (from their facts), the package releases the plan would install
there, with the dependencies the host lacks, downloaded by the host's own
apt in download-only mode over the usual SSH connection (nothing is
installed, its package lists are not refreshed), or by its dnf download
--resolve with createrepo_c's metadata on a RHEL-family host. An apt
repository's Release is signed with a key made for the bundle
(keys/bundle.gpg, with gpg on this machine); manifest.json lists every
file with its sha256, size, source and the lock entry it satisfies, and the
sha256 of the lock file it was built for. Every image the lock file pins
for a node block is saved, for each platform its hosts run, by digest into
the bundle's OCI image layout (images/), named repository@digest; for a
node block whose runtime is enroot, whose import reads no OCI layout, a
host of the block also imports each with its own enroot (by digest, as
apply pulls it) and its image file is copied into images/enroot/ (that
host must have enroot). A dnf
repository's repomd.xml is signed with the same key. With
-out BUNDLE.tar (or .tar.gz, .tgz) the bundle is written as one tarball
instead, the same bytes for the same bundle: the manifest first, then
every file it lists in order, each 0644, owned by 0:0, dated 1970-01-01.

Build it on a host that does not yet run the spec (the bundle holds what
the plan installs there), of the same OS release as the air-gapped nodes.

Exit status: 0 the bundle is written; 1 a host could not be planned or
could not download a release.

With -check BUNDLE, nothing is built and no host is asked: each repository
of the bundle is verified against the manifest, then this machine's apt,
in a scratch root with the network disabled (unshare -n), whose only
source is the repository and whose dpkg status is the one its packages were
resolved against, simulates installing every release the bundle was built
for. A dnf repository is checked alike by this machine's dnf (dnf and
rpm must be installed here): in a scratch installroot holding the rpm
database its packages were resolved against, with the bundle's
repository as the only one (its metadata's signature checked with the
bundle's key) and the network disabled, dnf resolves installing every
release and answers no. Exit 0: every repository is closed; 1: a
dependency is missing (apt's or dnf's words name it) or the check could
not run. BUNDLE may be a directory or a tarball.

-format json (or -json) writes the result, of bundle or of -check, as
one JSON document carrying the format_version of every gpuform document.`,
		Args: maxOneDir,
		RunE: jsonErrors(s, func() bool { return a.Format == "json" || a.json }, func(cmd *cobra.Command, args []string) error {
			if err := a.finish(cmd.Flags(), args); err != nil {
				return err
			}
			if a.Check != "" {
				results, err := runBundleCheck(cmd.Context(), a.Check)
				if err != nil {
					return err
				}
				var closed bool
				if a.Format == "json" {
					if closed, err = writeBundleCheckJSON(s.Out, a.Check, results); err != nil {
						return err
					}
				} else {
					closed = renderBundleCheck(s.Out, a.Check, results)
				}
				if !closed {
					return exitError{ExitFailed}
				}
				return nil
			}
			var v operationView = humanOperation{s}
			if a.Format == "json" {
				v = jsonOperation{s}
			}
			m, err := runBundle(cmd.Context(), s, a, v)
			if err != nil {
				return err
			}
			if a.Format == "json" {
				return writeBundleJSON(s.Out, a.Out, m)
			}
			renderBundle(s.Out, a.Out, m)
			return nil
		}),
	}
	a.register(cmd.Flags())
	completeValues(cmd, "format", "text", "json")
	return cmd
}

// platformOf is a host's packaging platform, from its facts.
type platformOf struct{ family, os, arch string }

// bundleGroup is one repository to build: a node block on one platform,
// the host that resolves it and the releases it needs.
type bundleGroup struct {
	node     string
	platform platformOf
	host     target.Host
	// wanted maps each "name=version" to the lock entry it satisfies.
	wanted map[string]string
}

// runBundle is gpuform bundle's work: plan the hosts, group what they
// install by node block and platform, and have one host of each group
// download it.
func runBundle(ctx context.Context, s Streams, a *bundleArguments, v operationView) (*bundle.Manifest, error) {
	cfg, diags := a.Spec.loadPinned(s, a.Dir)
	if err := v.Diagnostics(diags, cfg); err != nil {
		return nil, err
	}
	out := a.Out
	if bundle.IsArchive(a.Out) {
		if _, err := os.Lstat(a.Out); err == nil {
			return nil, fmt.Errorf("-out %s: the file exists; a bundle tarball is written as a new file", a.Out)
		}
	} else if ents, err := os.ReadDir(a.Out); err == nil && len(ents) > 0 {
		return nil, fmt.Errorf("-out %s: the directory is not empty; a bundle is made in a new directory", a.Out)
	}
	hosts, err := selectHosts(cfg, a.Dir, a.Targets, v)
	if err != nil {
		return nil, err
	}
	if err := a.Conn.refuseLocal(hosts, "bundle would download packages on the machine gpuform runs on"); err != nil {
		return nil, err
	}
	o, err := a.Conn.targetOptions(s, a.Dir, v.ShowsProbeProgress(), "probing")
	if err != nil {
		return nil, err
	}
	k, err := s.KB()
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	platforms := map[string]platformOf{}
	p, err := plan.RunProbed(ctx, k, hosts, o, nil, func(pr target.Probed) error {
		mu.Lock()
		defer mu.Unlock()
		platforms[pr.Host.Host.Name] = platformOf{pr.Facts.OS.Family(), pr.Facts.OS.ID + " " + pr.Facts.OS.VersionID, pr.Facts.Arch}
		return nil
	})
	if err != nil {
		return nil, err
	}
	groups := map[string]*bundleGroup{}
	var order []string
	for _, hp := range p.Hosts {
		if hp.Error != "" {
			return nil, fmt.Errorf("host %s: %s", hp.Host, hp.Error)
		}
		pf := platforms[hp.Host]
		key := hp.Node + "\x00" + pf.family + "\x00" + pf.os + "\x00" + pf.arch
		g := groups[key]
		if g == nil {
			g = &bundleGroup{node: hp.Node, platform: pf, host: hp.Target, wanted: map[string]string{}}
			groups[key] = g
			order = append(order, key)
		}
		for _, rc := range hp.ResourceChanges {
			if rc.Unresolved != "" {
				return nil, fmt.Errorf("host %s: %s: %s", hp.Host, rc.Resource, rc.Unresolved)
			}
			if _, pkg := rc.After["package"]; pkg && rc.Action != resource.NoOp && len(rc.Releases) == 0 {
				return nil, fmt.Errorf("host %s: %s: its releases could not be resolved against the host's repository metadata, which is empty: run apt-get update or dnf makecache there and bundle again", hp.Host, rc.Resource)
			}
			for name, ver := range rc.Releases {
				g.wanted[name+"="+ver] = fmt.Sprintf("node %s: %s %s=%s", hp.Node, rc.Resource, name, ver)
			}
		}
	}
	if bundle.IsArchive(a.Out) {
		// Built next to the tarball (the same file system, room for
		// both being the operator's to give), then written as one.
		build, err := os.MkdirTemp(filepath.Dir(a.Out), "."+filepath.Base(a.Out)+".build-")
		if err != nil {
			return nil, fmt.Errorf("-out %s: %w", a.Out, err)
		}
		defer os.RemoveAll(build)
		out = build
	} else if err := os.MkdirAll(a.Out, 0o755); err != nil {
		return nil, err
	}
	m := &bundle.Manifest{}
	lockPath := filepath.Join(a.Dir, spec.LockFileName)
	if _, err := os.Stat(lockPath); err == nil {
		if m.Lock, _, err = bundle.HashFile(lockPath); err != nil {
			return nil, err
		}
	}
	tmp, err := os.MkdirTemp("", "gpuform-bundle-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	signer, err := bundle.NewSigner(ctx, tmp, out)
	if err != nil {
		return nil, err
	}
	defer signer.Close()
	if err := m.AddFile(out, bundle.KeyFile, "gpuform", ""); err != nil {
		return nil, err
	}
	// The images come from the registries first: an enroot node block's
	// .sqsh is recorded on its image's entry. Then each node block's host
	// is reached once, for its repository and its enroot imports alike.
	if err := bundleImages(ctx, out, lockPath, m, order, groups); err != nil {
		return nil, err
	}
	for _, key := range order {
		if err := bundleFromHost(ctx, o, signer, out, m, groups[key]); err != nil {
			return nil, err
		}
	}
	if err := bundle.WriteManifest(out, m); err != nil {
		return nil, err
	}
	if out != a.Out {
		return m, bundle.WriteArchive(out, a.Out)
	}
	return m, nil
}

// bundleImages saves every image the lock file pins for a node block, for
// each platform its hosts run, by digest into the bundle's OCI layout.
func bundleImages(ctx context.Context, out, lockPath string, m *bundle.Manifest, order []string, groups map[string]*bundleGroup) error {
	lock, _, diags := spec.LoadLockFile(lockPath)
	if diags.HasErrors() {
		return diags
	}
	if lock == nil {
		return nil
	}
	saved := map[string]bool{}
	for _, key := range order {
		g := groups[key]
		platform := bundle.Platform(g.platform.arch)
		for _, ref := range slices.Sorted(maps.Keys(lock.Images[g.node])) {
			named, err := registry.SaveLayout(ctx, ref, lock.Images[g.node][ref], platform, filepath.Join(out, bundle.ImagesDir), registry.Options{})
			if err != nil {
				return fmt.Errorf("node %s: %w", g.node, err)
			}
			m.Images = append(m.Images, bundle.Image{Node: g.node, Ref: ref, Platform: platform, Name: named})
			saved[named] = true
		}
	}
	if len(saved) == 0 {
		return nil
	}
	return filepath.WalkDir(filepath.Join(out, bundle.ImagesDir), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(out, p)
		if err != nil {
			return err
		}
		return m.AddFile(out, filepath.ToSlash(rel), "the lock's images, saved from their registries by digest", "")
	})
}

// bundleFromHost has the node block's host (one SSH connection) build
// its repository of the releases the plan installs and, for an enroot
// node block, import each pinned image as a .sqsh; nothing to do, no
// connection.
func bundleFromHost(ctx context.Context, o target.Options, signer *bundle.Signer, out string, m *bundle.Manifest, g *bundleGroup) error {
	var ims []bundle.EnrootImage
	if n := g.host.Node; n != nil && resource.ImageRuntime(n) == facts.RuntimeEnroot {
		pinned, _ := resource.PinnedImages(n)
		for _, im := range pinned {
			ims = append(ims, bundle.EnrootImage{Ref: im.Ref, URI: resource.EnrootURI(im)})
		}
	}
	if len(g.wanted) == 0 && len(ims) == 0 {
		return nil
	}
	tr, err := o.Connect(ctx, g.host.Host)
	if err != nil {
		return err
	}
	defer tr.Close()
	become := g.host.Host.Become != ""
	if len(g.wanted) > 0 {
		if err := bundle.BuildRepo(ctx, tr, signer, out, m, bundle.Group{
			Node: g.node, Family: g.platform.family, OS: g.platform.os, Arch: g.platform.arch,
			Host: g.host.Host.Name, Become: become, Wanted: g.wanted,
		}); err != nil {
			return err
		}
	}
	if len(ims) == 0 {
		return nil
	}
	return bundle.ImportEnroot(ctx, tr, become, out, m, g.node, bundle.Platform(g.platform.arch), ims)
}

// renderBundle is the bundle's summary: each repository, its packages,
// and the size of it all.
func renderBundle(w io.Writer, out string, m *bundle.Manifest) {
	var total int64
	for _, f := range m.Files {
		total += f.Size
	}
	sort.SliceStable(m.Repos, func(i, j int) bool { return m.Repos[i].Dir < m.Repos[j].Dir })
	for _, r := range m.Repos {
		fmt.Fprintf(w, "node %q on %s %s: %d packages for %d releases (%s)\n", r.Node, r.OS, r.Arch, len(r.Packages), len(r.Wanted), r.Dir)
	}
	for _, im := range m.Images {
		fmt.Fprintf(w, "node %q image %s (%s): %s\n", im.Node, im.Ref, im.Platform, im.Name)
	}
	fmt.Fprintf(w, "\nWrote the bundle %s: %d files, %s.\n", out, len(m.Files), readlimit.FormatSize(total))
}

// bundleUse is an offline bundle plan and apply use (-bundle): its
// manifest, verified, and the repository each host's plan took its
// releases from.
type bundleUse struct {
	// path is the bundle as given, dir its directory: path, or where
	// the tarball path was extracted, which close removes.
	path  string
	dir   string
	done  func()
	m     *bundle.Manifest
	mu    sync.Mutex
	repos map[string]*bundle.Repo
	// images are, by host, what the bundle gives each image of its
	// node block for its platform (facts.Node.BundleImages).
	images map[string]map[string]*facts.BundleImage
}

// openBundle reads and verifies the bundle at path ("" for none): a
// bundle built for another lock file, or a file that does not match its
// manifest, is refused before any host is asked.
func openBundle(specDir, path string) (_ *bundleUse, err error) {
	if path == "" {
		return nil, nil
	}
	dir, done, err := bundleDir("-bundle", path)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			done()
		}
	}()
	m, err := bundle.ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	lock := ""
	if _, err := os.Stat(filepath.Join(specDir, spec.LockFileName)); err == nil {
		if lock, _, err = bundle.HashFile(filepath.Join(specDir, spec.LockFileName)); err != nil {
			return nil, err
		}
	}
	if lock != m.Lock {
		return nil, fmt.Errorf("-bundle %s was built for another lock file: the bundle's lock has sha256 %q, %s has %q; build the bundle again (gpuform bundle) after gpuform lock", path, m.Lock, filepath.Join(specDir, spec.LockFileName), lock)
	}
	if err := m.Verify(dir, ""); err != nil {
		return nil, fmt.Errorf("-bundle %s: %w; nothing was copied or installed", path, err)
	}
	return &bundleUse{path: path, dir: dir, done: done, m: m, repos: map[string]*bundle.Repo{}, images: map[string]map[string]*facts.BundleImage{}}, nil
}

// close removes what openBundle extracted; nil-safe.
func (b *bundleUse) close() {
	if b != nil {
		b.done()
	}
}

// bundleDir returns the directory of the bundle at path, given as flag
// (-bundle, -check): path itself, or a new temporary directory (under
// TMPDIR) the tarball path is extracted into, safely
// (bundle.ExtractArchive), which done removes.
func bundleDir(flag, path string) (dir string, done func(), err error) {
	if !bundle.IsArchive(path) {
		return path, func() {}, nil
	}
	dir, err = os.MkdirTemp("", "gpuform-bundle-")
	if err != nil {
		return "", nil, err
	}
	done = func() { os.RemoveAll(dir) }
	if err := bundle.ExtractArchive(path, dir); err != nil {
		done()
		if flag == "-bundle" {
			return "", nil, fmt.Errorf("-bundle %s: %w; nothing was copied or installed", path, err)
		}
		return "", nil, fmt.Errorf("%s %s: %w", flag, path, err)
	}
	return dir, done, nil
}

// hook makes each host's offers its node block's repository for its OS
// and arch; a host the bundle does not cover fails its plan. nil for no
// bundle.
func (b *bundleUse) hook() plan.ProbedHook {
	if b == nil {
		return nil
	}
	return func(pr target.Probed) error {
		f := pr.Facts
		ims := map[string]*facts.BundleImage{}
		pinned, _ := resource.PinnedImages(pr.Host.Node)
		enroot := resource.ImageRuntime(pr.Host.Node) == facts.RuntimeEnroot
		for _, im := range pinned {
			if enroot {
				ims[im.Ref] = b.m.LoadEnroot(b.dir, pr.Host.Node.Name, im.Ref, im.Repo, im.Digest, spec.Platform(f.Arch))
				continue
			}
			ims[im.Ref] = b.m.LoadImage(b.dir, pr.Host.Node.Name, im.Ref, im.Repo, im.Digest, spec.Platform(f.Arch))
		}
		f.BundleImages = ims
		r, err := b.m.RepoFor(pr.Host.Node.Name, f.OS.Family(), f.OS.ID+" "+f.OS.VersionID, f.Arch)
		switch {
		case err != nil && b.m.HasRepos(pr.Host.Node.Name):
			return err
		case err != nil:
			// A node block the bundle holds no packages for (its plan
			// installed none when the bundle was built) is offered
			// none: a release its plan needs now is missing, naming
			// the bundle; its images still load from the bundle.
			f.Offers = &facts.Offers{Manager: facts.Manager(f.OS.Family()), Versions: map[string][]string{}, Sources: []string{"bundle " + b.path + " (no packages for node " + pr.Host.Node.Name + ")"}, Lists: 1}
		default:
			offers := r.Offers()
			for _, vs := range offers {
				slices.SortStableFunc(vs, func(a, b string) int { return -facts.CompareVersions(a, b) })
			}
			f.Offers = &facts.Offers{Manager: facts.Manager(r.Family), Versions: offers, Sources: []string{"bundle " + b.path + " " + r.Dir}, Lists: 1}
		}
		b.mu.Lock()
		if r != nil {
			b.repos[pr.Host.Host.Name] = r
		}
		b.images[pr.Host.Host.Name] = ims
		b.mu.Unlock()
		return nil
	}
}

// stage is apply's Stage for the bundle: the host's repository copied,
// verified and named as apt's only source for the steps. nil for no
// bundle.
func (b *bundleUse) stage(progress func(apply.Event)) func(ctx context.Context, tr transport.Transport, hp *plan.HostPlan) (map[string]string, error) {
	if b == nil {
		return nil
	}
	return func(ctx context.Context, tr transport.Transport, hp *plan.HostPlan) (map[string]string, error) {
		b.mu.Lock()
		r := b.repos[hp.Host]
		loads := b.loads(hp)
		b.mu.Unlock()
		become := hp.Target.Host.Become != ""
		if len(loads) > 0 {
			copied, kept, err := bundle.StageImages(ctx, tr, become, b.dir, loads)
			if err != nil {
				return nil, err
			}
			progress(apply.Event{Host: hp.Host, Message: fmt.Sprintf("bundle %s: %d image blobs copied, %d already there", bundle.ImagesDir, len(copied), len(kept))})
		}
		if r == nil {
			// Packages the plan installs resolve only against the
			// bundle's repository: without one the plan installs none.
			return map[string]string{}, nil
		}
		st, err := bundle.Stage(ctx, tr, become, b.m, b.dir, r)
		if err != nil {
			return nil, err
		}
		progress(apply.Event{Host: hp.Host, Message: fmt.Sprintf("bundle %s: %d files copied, %d already there", r.Dir, len(st.Copied), len(st.Kept))})
		return st.Env, nil
	}
}

// loads are the bundle's images hp's plan loads: those of its
// container_images change whose value changes. b.mu is held.
func (b *bundleUse) loads(hp *plan.HostPlan) []*facts.BundleImage {
	var out []*facts.BundleImage
	for _, rc := range hp.ResourceChanges {
		if rc.Resource != resource.ContainerImages || rc.Action == resource.NoOp {
			continue
		}
		for _, ref := range slices.Sorted(maps.Keys(rc.After)) {
			if bi := b.images[hp.Host][ref]; bi != nil && bi.Missing == "" && rc.Before[ref] != rc.After[ref] {
				out = append(out, bi)
			}
		}
	}
	return out
}

// runBundleCheck is bundle -check's work: verify the bundle, then check
// each repository closed.
func runBundleCheck(ctx context.Context, path string) ([]*bundle.CheckResult, error) {
	dir, done, err := bundleDir("-check", path)
	if err != nil {
		return nil, err
	}
	defer done()
	m, err := bundle.ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	// A check of nothing is not a pass.
	if len(m.Repos) == 0 {
		return nil, fmt.Errorf("-check %s: the bundle holds no package repository, so there is nothing to prove closed", path)
	}
	if err := m.Verify(dir, ""); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "gpuform-bundle-check-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	var out []*bundle.CheckResult
	for i := range m.Repos {
		r := &m.Repos[i]
		var res *bundle.CheckResult
		switch r.Family {
		case "debian":
			res, err = bundle.CheckApt(ctx, dir, r, tmp)
		case "rhel":
			res, err = bundle.CheckDnf(ctx, dir, r, tmp, bundle.Tools{})
		default:
			return nil, fmt.Errorf("the repository %s is a %s one: bundle -check checks apt and dnf repositories", r.Dir, r.Family)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, res)
	}
	return out, nil
}

// renderBundleCheck writes each repository's verdict and reports whether
// every one is closed.
func renderBundleCheck(w io.Writer, path string, results []*bundle.CheckResult) bool {
	closed := true
	for _, r := range results {
		if len(r.Problems) == 0 {
			fmt.Fprintf(w, "ok    %s (node %q, %s %s): %d releases install with %d packages, offline\n", r.Repo.Dir, r.Repo.Node, r.Repo.OS, r.Repo.Arch, len(r.Repo.Wanted), r.Installs)
			continue
		}
		closed = false
		fmt.Fprintf(w, "fail  %s (node %q, %s %s): not closed\n", r.Repo.Dir, r.Repo.Node, r.Repo.OS, r.Repo.Arch)
		for _, p := range r.Problems {
			fmt.Fprintf(w, "        %s\n", p)
		}
	}
	if closed {
		fmt.Fprintf(w, "\nThe bundle %s is closed: every release installs from it alone.\n", path)
	} else {
		fmt.Fprintf(w, "\nThe bundle %s is not closed: a node would miss the dependencies above.\n", path)
	}
	return closed
}

// copyNote says, for each host the plan changes, which repository of the
// bundle apply copies there and how much (at most: the files the host
// already holds with the right sha256 are not copied again).
func (b *bundleUse) copyNote(w io.Writer, p *plan.Plan) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, hp := range p.Hosts {
		if loads := b.loads(hp); len(loads) > 0 {
			var size int64
			for _, l := range loads {
				size += l.Size
			}
			fmt.Fprintf(w, "Bundle: apply copies the blobs of %d images to %s:%s/ (%s; only what the host lacks) and loads them by digest, pulling none.\n", len(loads), hp.Host, bundle.NodeImagesDir, readlimit.FormatSize(size))
		}
		r := b.repos[hp.Host]
		if r == nil || !hp.HasChanges() {
			continue
		}
		var n int
		var size int64
		for _, f := range b.m.Files {
			if (strings.HasPrefix(f.Path, r.Dir+"/") && !bundle.CheckOnly(f.Path)) || f.Path == bundle.KeyFile {
				n++
				size += f.Size
			}
		}
		fmt.Fprintf(w, "Bundle: apply copies %s to %s:%s/ (%d files, %s; only what the host lacks) and installs from it alone.\n", r.Dir, hp.Host, bundle.NodeDir, n, readlimit.FormatSize(size))
	}
}
