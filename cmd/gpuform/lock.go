package main

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpuform/gpuform/internal/readlimit"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/lockfile"
	"github.com/gpuform/gpuform/provision/registry"
	"github.com/gpuform/gpuform/provision/resource"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/transport"
	"github.com/gpuform/gpuform/spec"
)

// lockArguments are the arguments of gpuform lock.
type lockArguments struct {
	// Dir is the spec directory, "." when omitted.
	Dir string
	// Spec are -var and -var-file.
	Spec specFlags
	// Conn are the connection flags and -probe-timeout.
	Conn connectFlags
	// Check is -check: write nothing; exit 2 when the lock file would
	// change.
	Check bool
	// Images is -images: resolve container images at their registries.
	Images bool
	// Upgrade is -upgrade: lock the newest release the hosts' repositories
	// offer.
	Upgrade bool
}

func (a *lockArguments) register(fs *pflag.FlagSet) {
	a.Spec.register(fs)
	a.Conn.register(fs)
	a.Conn.timeouts.registerProbe(fs)
	fs.BoolVar(&a.Check, "check", false, "do not write; exit 2 if the lock file would change (without -upgrade, judge the spec against the lock file and ask no host)")
	fs.BoolVar(&a.Images, "images", true, "resolve container images at their registries (false: ask no registry; keep the image pins the lock file has and leave a tag it does not pin unpinned, with a warning)")
	fs.BoolVar(&a.Upgrade, "upgrade", false, "lock the newest release of each floating version that the hosts' repositories offer")
}

// finish takes the spec directory.
func (a *lockArguments) finish(_ *pflag.FlagSet, args []string) error {
	a.Dir = dirArg(args)
	return nil
}

// parseLockArguments parses gpuform lock's command line (after "lock").
func parseLockArguments(args []string) (*lockArguments, error) {
	a := &lockArguments{}
	return a, parseArguments(args, a.register, maxOneDir, a.finish)
}

func newLockCommand(s Streams) *cobra.Command {
	a := &lockArguments{}
	cmd := &cobra.Command{
		Use:         "lock [DIR]",
		Annotations: graceful(),
		Short:       "Record the exact release of every pinned component in .gpuform.lock.hcl",
		Long: `Lock writes DIR/.gpuform.lock.hcl: the exact release of the driver, fabric
manager, CUDA, NCCL, DCGM and container toolkit of every node. Commit it with
the spec, so that a version bump is a reviewed diff of the lock file.

An exact version in the spec ("580.95.05") is recorded as it is. A floating
one ("580", "12.8") is resolved to the release the node's hosts run now,
probed over SSH; the hosts must agree, or lock stops and says which host runs
what. plan, apply and verify then use the locked release wherever the spec
names a branch, and lint no longer warns that it is not pinned.

With -upgrade, a floating version is resolved instead to the newest release
of its branch that the hosts' package repositories offer (apt-cache madison,
dnf list --showduplicates, from the package lists as they are on the
host), so the lock moves forward and the next apply installs that release;
this is also how to lock a branch no host runs yet. The hosts must offer the
same newest release, or lock stops and says what each host runs and offers.

Each container image (container { images = [...] }) is resolved to the
digest its registry serves now, for linux/amd64 and linux/arm64, with the
Docker credentials of the user running gpuform (~/.docker/config.json;
nothing is sent to the nodes). An image the lock file already pins keeps its
digest: a tag that moves in the registry changes the lock only with
-upgrade, and plan then pulls the new image. -images=false asks no
registry, for a machine that cannot reach them: the image pins stay as they
are, the package releases are recorded, and a tag the lock file does not pin
yet is left unpinned with a warning naming it (plan does not pull it; lock
-check fails on it). A reference that names its digest (repo@sha256:...) is
pinned by the spec itself.

With -check, nothing is written and no host or registry is asked: the spec
is judged against the lock file (every floating version must have a pin of
its branch there, and every image tag a digest), so the check passes right
after lock -upgrade, before any host runs the new release. Whether the hosts
run what is locked is plan's and verify's job. -check -upgrade does ask the
hosts and the registries, to say whether an upgrade would move the lock.

Exit status: 0 the lock file is written (also when -images=false left an
image unpinned: the warning names it), or, with -check, up to date; 1 a
version or an image could not be locked, or with -check, a floating version
or an image tag has no pin in the lock file; 2 with -check, the lock file
would change.`,
		Args: maxOneDir,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := a.finish(cmd.Flags(), args); err != nil {
				return err
			}
			v := lockView{s}
			m, err := runLock(cmd.Context(), s, a, v)
			if err != nil {
				return err
			}
			if m.UpToDate {
				v.UpToDate(m.Path)
				return nil
			}
			v.Changes(m)
			if a.Check {
				return exitError{ExitReport}
			}
			if err := writeNewFile(m.Path, m.Content); err != nil {
				return err
			}
			v.Wrote(m.Path)
			return nil
		},
	}
	a.register(cmd.Flags())
	return cmd
}

// lockModel is what gpuform lock made: the lock file it would write,
// beside the one there is.
type lockModel struct {
	// Path is the lock file's.
	Path string
	// Prev is the lock file there is (nil when none), PrevDiags its
	// diagnostics: with an error, it is not a valid lock file.
	Prev      *spec.Lock
	PrevDiags hcl.Diagnostics
	// Lock is the new lock, Content its file.
	Lock    *spec.Lock
	Content []byte
	// UpToDate says the lock file already holds Content.
	UpToDate bool
}

// runLock is gpuform lock's work: it resolves every floating version
// (from the hosts, their repositories with -upgrade, or the lock file
// with -check) and every image, and returns the lock file it makes.
// What fails on the way is reported through the view.
func runLock(ctx context.Context, s Streams, a *lockArguments, v lockView) (*lockModel, error) {
	cfg, diags := a.Spec.load(s, a.Dir)
	if diags.HasErrors() {
		return nil, v.Diagnostics(diags, cfg)
	}
	all, diags := target.Select(cfg, nil)
	if diags.HasErrors() {
		return nil, v.Diagnostics(diags, cfg)
	}
	path := filepath.Join(a.Dir, spec.LockFileName)
	if err := readlimit.LinkLeavesRepository(path); err != nil {
		return nil, err
	}
	prev, _, prevDiags := spec.LoadLockFile(path)
	// -check judges the spec against the lock file; it asks no
	// host (see lockfile.FromLock). -check -upgrade still asks
	// what an upgrade would move to.
	fromLock := a.Check && !a.Upgrade
	var hosts []target.Host
	for _, h := range all {
		if lockfile.NeedsFacts(h.Node) && !fromLock {
			hosts = append(hosts, h)
		}
	}
	got := map[string]*facts.Node{}
	if len(hosts) > 0 {
		if err := a.Conn.refuseLocal(hosts, "lock would run its probe on the machine gpuform runs on"); err != nil {
			return nil, err
		}
		o, err := a.Conn.targetOptions(s, a.Dir, true, "probing")
		if err != nil {
			return nil, err
		}
		var failed bool
		got, failed = probeForLock(ctx, v, hosts, o)
		if failed {
			return nil, v.Failed("every host of a node with a floating version must be probed to lock it; nothing was written.")
		}
	}
	k, err := s.KB()
	if err != nil {
		return nil, err
	}
	var lock *spec.Lock
	if fromLock {
		judged := prev
		if prevDiags.HasErrors() {
			judged = nil
		}
		lock, diags = lockfile.FromLock(cfg, judged)
	} else if a.Upgrade {
		o, err := a.Conn.targetOptions(s, a.Dir, true, "listing packages")
		if err != nil {
			return nil, err
		}
		offers, failed := offersForLock(ctx, s, v, hosts, got, o)
		if failed {
			return nil, v.Failed("every host of a node with a floating version must say what its repositories offer to upgrade it; nothing was written.")
		}
		lock, diags = lockfile.Upgrade(k, cfg, got, offers)
	} else {
		lock, diags = lockfile.Resolve(k, cfg, got)
	}
	if diags.HasErrors() {
		return nil, v.Diagnostics(diags, cfg)
	}
	imagePrev := prev
	if prevDiags.HasErrors() {
		imagePrev = nil
	}
	mode := lockfile.ImagesResolve
	switch {
	case fromLock:
		// -check asks no registry, as it asks no host: a tag
		// the lock file does not pin fails the gate.
		mode = lockfile.ImagesCheck
	case !a.Images:
		mode = lockfile.ImagesOffline
	}
	imageDiags := lockfile.Images(ctx, cfg, imagePrev, lock, a.Upgrade, mode, resolveImage)
	// Offline, an image nobody pinned yet stays unpinned: the
	// warning names it, and the package releases are written.
	v.ImageDiagnostics(imageDiags, cfg)
	if imageDiags.HasErrors() {
		if mode == lockfile.ImagesCheck {
			return nil, v.Failed("every container image tag must be pinned in the lock file.")
		}
		return nil, v.Failed("every container image must be resolved to its digest to lock it; nothing was written.")
	}
	old, _ := readlimit.ReadRegularFile(path, spec.MaxFileSize)
	m := &lockModel{Path: path, Prev: prev, PrevDiags: prevDiags, Lock: lock, Content: spec.FormatLock(lock)}
	m.UpToDate = bytes.Equal(old, m.Content)
	return m, nil
}

// lockView renders gpuform lock's results: what failed on standard
// error, what moves and what was written on standard output.
type lockView struct{ s Streams }

// Diagnostics writes diagnostics that hold an error (lock shows no
// warnings of the spec) and returns the exit error.
func (v lockView) Diagnostics(diags hcl.Diagnostics, cfg *spec.Config) error {
	writeDiags(v.s, diags, cfg)
	return exitError{ExitFailed}
}

// ImageDiagnostics writes the images' diagnostics, warnings included.
func (v lockView) ImageDiagnostics(diags hcl.Diagnostics, cfg *spec.Config) {
	writeDiags(v.s, diags, cfg)
}

// HostFailed reports a host that could not be probed or asked.
func (v lockView) HostFailed(host, err string) {
	fmt.Fprintf(v.s.Err, "Error: %s: %s\n", host, err)
}

// Failed says why nothing was locked and returns the exit error.
func (v lockView) Failed(why string) error {
	fmt.Fprintln(v.s.Err, "Error: "+why)
	return exitError{ExitFailed}
}

// UpToDate says the lock file does not change.
func (v lockView) UpToDate(path string) {
	fmt.Fprintf(v.s.Out, "%s is up to date.\n", path)
}

// Changes prints what moves, after a warning when the lock file there
// was broken.
func (v lockView) Changes(m *lockModel) {
	if m.PrevDiags.HasErrors() {
		// A broken lock file is what lock repairs, but nobody
		// should learn of the breakage from a diff of every pin.
		fmt.Fprintf(v.s.Err, "Warning: %s is not a valid lock file (%s); it is written anew from the spec and the hosts.\n", m.Path, m.PrevDiags.Errs()[0])
	}
	writeLockChanges(v.s, m.Prev, m.Lock)
}

// Wrote says the lock file was written.
func (v lockView) Wrote(path string) {
	fmt.Fprintf(v.s.Out, "Wrote %s.\n", path)
}

// probeForLock probes the hosts and reports every one that failed; lock
// needs all of them.
func probeForLock(ctx context.Context, v lockView, hosts []target.Host, o target.Options) (map[string]*facts.Node, bool) {
	got := map[string]*facts.Node{}
	failed := false
	for _, r := range probeHosts(ctx, hosts, o) {
		if r.Error != "" {
			v.HostFailed(r.Host, r.Error)
			failed = true
			continue
		}
		got[r.Host] = r.Facts
	}
	return got, failed
}

// writeLockChanges prints what moves, as a reviewer will see it in the diff.
func writeLockChanges(s Streams, prev, next *spec.Lock) {
	var nodes []string
	seen := map[string]bool{}
	for _, l := range []*spec.Lock{prev, next} {
		if l == nil {
			continue
		}
		for n := range l.Nodes {
			if !seen[n] {
				seen[n] = true
				nodes = append(nodes, n)
			}
		}
		for n := range l.Images {
			if !seen[n] {
				seen[n] = true
				nodes = append(nodes, n)
			}
		}
	}
	sort.Strings(nodes)
	for _, n := range nodes {
		writeImageChanges(s, n, prev, next)
		for _, c := range spec.Components() {
			before, hadBefore := prev.Pinned(n, c)
			after, hasAfter := next.Pinned(n, c)
			switch {
			case hadBefore && hasAfter && before.Raw != after.Raw:
				fmt.Fprintf(s.Out, "  ~ node %q %s: %s -> %s\n", n, c, before, after)
			case !hadBefore && hasAfter:
				fmt.Fprintf(s.Out, "  + node %q %s: %s\n", n, c, after)
			case hadBefore && !hasAfter:
				fmt.Fprintf(s.Out, "  - node %q %s: %s\n", n, c, before)
			}
		}
	}
}

// resolveImage asks an image's registry for its digests, with the Docker
// credentials of the user running gpuform (read here, never sent to a
// node).
func resolveImage(ctx context.Context, ref string) (spec.ImagePin, error) {
	return registry.Resolve(ctx, ref, spec.ImagePlatforms(), registry.Options{})
}

// writeImageChanges prints the image pins of node n that move.
func writeImageChanges(s Streams, n string, prev, next *spec.Lock) {
	refs := map[string]bool{}
	for _, l := range []*spec.Lock{prev, next} {
		if l != nil {
			for ref := range l.Images[n] {
				refs[ref] = true
			}
		}
	}
	for _, ref := range slices.Sorted(maps.Keys(refs)) {
		before, hadBefore := prev.Image(n, ref)
		after, hasAfter := next.Image(n, ref)
		switch {
		case hadBefore && hasAfter && before.Digest != after.Digest:
			fmt.Fprintf(s.Out, "  ~ node %q image %s: %s -> %s\n", n, ref, before.Digest, after.Digest)
		case !hadBefore && hasAfter:
			fmt.Fprintf(s.Out, "  + node %q image %s: %s\n", n, ref, after.Digest)
		case hadBefore && !hasAfter:
			fmt.Fprintf(s.Out, "  - node %q image %s: %s\n", n, ref, before.Digest)
		}
	}
}

// offersForLock asks every host which releases of its node's floating
// components its repositories offer, by host and component; failed is
// true when a host could not be asked (each is reported).
func offersForLock(ctx context.Context, s Streams, v lockView, hosts []target.Host, got map[string]*facts.Node, o target.Options) (lockfile.Offers, bool) {
	var mu sync.Mutex
	offers := lockfile.Offers{}
	errs := target.Each(ctx, hosts, o, func(ctx context.Context, h target.Host) error {
		f := got[h.Host.Name]
		if f == nil {
			return fmt.Errorf("not probed")
		}
		k, err := s.KB()
		if err != nil {
			return err
		}
		family := f.OS.Family()
		byName := map[string]spec.Component{}
		var names []string
		for comp, a := range spec.NodeVersions(h.Node) {
			if a.V.IsExact() {
				continue
			}
			if name, ok := resource.UpgradePackage(k, h.Node, comp, family); ok {
				byName[name] = comp
				names = append(names, name)
			}
		}
		mine := map[spec.Component][]string{}
		for _, comp := range byName {
			mine[comp] = nil
		}
		if len(names) > 0 {
			ctx, cancel := transport.WithTimeout(ctx, o.ProbeLimit(h.Host), "the package listing", target.ProbeSetting)
			defer cancel()
			t, err := o.Connect(ctx, h.Host)
			if err != nil {
				return err
			}
			defer t.Close()
			sort.Strings(names)
			avail, err := facts.Available(ctx, t, family, names, h.Host.Become != "")
			if err != nil {
				return err
			}
			for name, versions := range avail {
				for _, v := range versions {
					mine[byName[name]] = append(mine[byName[name]], resource.Upstream(v))
				}
			}
		}
		mu.Lock()
		offers[h.Host.Name] = mine
		mu.Unlock()
		return nil
	})
	failed := false
	for _, h := range hosts {
		if err := errs[h.Host.Name]; err != nil {
			v.HostFailed(h.Host.Name, target.ErrorText(err))
			failed = true
		}
	}
	return offers, failed
}
