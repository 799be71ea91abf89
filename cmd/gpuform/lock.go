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

	"github.com/spf13/cobra"

	"github.com/gpuform/gpuform/internal/readlimit"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/lockfile"
	"github.com/gpuform/gpuform/provision/registry"
	"github.com/gpuform/gpuform/provision/resource"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/transport"
	"github.com/gpuform/gpuform/spec"
)

func newLockCommand(s Streams) *cobra.Command {
	var flags specFlags
	var conn connectFlags
	var check, upgrade, images bool
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
			dir := dirArg(args)
			cfg, diags := flags.load(s, dir)
			if diags.HasErrors() {
				writeDiags(s, diags, cfg)
				return exitError{ExitFailed}
			}
			all, diags := target.Select(cfg, nil)
			if diags.HasErrors() {
				writeDiags(s, diags, cfg)
				return exitError{ExitFailed}
			}
			path := filepath.Join(dir, spec.LockFileName)
			if err := readlimit.LinkLeavesRepository(path); err != nil {
				return err
			}
			prev, _, prevDiags := spec.LoadLockFile(path)
			// -check judges the spec against the lock file; it asks no
			// host (see lockfile.FromLock). -check -upgrade still asks
			// what an upgrade would move to.
			fromLock := check && !upgrade
			var hosts []target.Host
			for _, h := range all {
				if lockfile.NeedsFacts(h.Node) && !fromLock {
					hosts = append(hosts, h)
				}
			}
			got := map[string]*facts.Node{}
			if len(hosts) > 0 {
				if err := conn.refuseLocal(hosts, "lock would run its probe on the machine gpuform runs on"); err != nil {
					return err
				}
				o, err := conn.targetOptions(s, dir, true, "probing")
				if err != nil {
					return err
				}
				var failed bool
				got, failed = probeForLock(cmd.Context(), s, hosts, o)
				if failed {
					fmt.Fprintln(s.Err, "Error: every host of a node with a floating version must be probed to lock it; nothing was written.")
					return exitError{ExitFailed}
				}
			}
			k, err := s.KB()
			if err != nil {
				return err
			}
			var lock *spec.Lock
			if fromLock {
				judged := prev
				if prevDiags.HasErrors() {
					judged = nil
				}
				lock, diags = lockfile.FromLock(cfg, judged)
			} else if upgrade {
				o, err := conn.targetOptions(s, dir, true, "listing packages")
				if err != nil {
					return err
				}
				offers, failed := offersForLock(cmd.Context(), s, hosts, got, o)
				if failed {
					fmt.Fprintln(s.Err, "Error: every host of a node with a floating version must say what its repositories offer to upgrade it; nothing was written.")
					return exitError{ExitFailed}
				}
				lock, diags = lockfile.Upgrade(k, cfg, got, offers)
			} else {
				lock, diags = lockfile.Resolve(k, cfg, got)
			}
			if diags.HasErrors() {
				writeDiags(s, diags, cfg)
				return exitError{ExitFailed}
			}
			d := prevDiags
			imagePrev := prev
			if d.HasErrors() {
				imagePrev = nil
			}
			mode := lockfile.ImagesResolve
			switch {
			case fromLock:
				// -check asks no registry, as it asks no host: a tag
				// the lock file does not pin fails the gate.
				mode = lockfile.ImagesCheck
			case !images:
				mode = lockfile.ImagesOffline
			}
			imageDiags := lockfile.Images(cmd.Context(), cfg, imagePrev, lock, upgrade, mode, resolveImage)
			if imageDiags.HasErrors() {
				writeDiags(s, imageDiags, cfg)
				if mode == lockfile.ImagesCheck {
					fmt.Fprintln(s.Err, "Error: every container image tag must be pinned in the lock file.")
				} else {
					fmt.Fprintln(s.Err, "Error: every container image must be resolved to its digest to lock it; nothing was written.")
				}
				return exitError{ExitFailed}
			}
			// Offline, an image nobody pinned yet stays unpinned: the
			// warning names it, and the package releases are written.
			writeDiags(s, imageDiags, cfg)
			old, _ := readlimit.ReadRegularFile(path, spec.MaxFileSize)
			content := spec.FormatLock(lock)
			if bytes.Equal(old, content) {
				fmt.Fprintf(s.Out, "%s is up to date.\n", path)
				return nil
			}
			if d.HasErrors() {
				// A broken lock file is what lock repairs, but nobody
				// should learn of the breakage from a diff of every pin.
				fmt.Fprintf(s.Err, "Warning: %s is not a valid lock file (%s); it is written anew from the spec and the hosts.\n", path, d.Errs()[0])
			}
			writeLockChanges(s, prev, lock)
			if check {
				return exitError{ExitReport}
			}
			if err := writeNewFile(path, content); err != nil {
				return err
			}
			fmt.Fprintf(s.Out, "Wrote %s.\n", path)
			return nil
		},
	}
	flags.register(cmd.Flags())
	conn.register(cmd.Flags())
	conn.timeouts.registerProbe(cmd.Flags())
	cmd.Flags().BoolVar(&check, "check", false, "do not write; exit 2 if the lock file would change (without -upgrade, judge the spec against the lock file and ask no host)")
	cmd.Flags().BoolVar(&images, "images", true, "resolve container images at their registries (false: ask no registry; keep the image pins the lock file has and leave a tag it does not pin unpinned, with a warning)")
	cmd.Flags().BoolVar(&upgrade, "upgrade", false, "lock the newest release of each floating version that the hosts' repositories offer")
	return cmd
}

// probeForLock probes the hosts and reports every one that failed; lock
// needs all of them.
func probeForLock(ctx context.Context, s Streams, hosts []target.Host, o target.Options) (map[string]*facts.Node, bool) {
	got := map[string]*facts.Node{}
	failed := false
	for _, r := range probeHosts(ctx, hosts, o) {
		if r.Error != "" {
			fmt.Fprintf(s.Err, "Error: %s: %s\n", r.Host, r.Error)
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
func offersForLock(ctx context.Context, s Streams, hosts []target.Host, got map[string]*facts.Node, o target.Options) (lockfile.Offers, bool) {
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
			fmt.Fprintf(s.Err, "Error: %s: %s\n", h.Host.Name, target.ErrorText(err))
			failed = true
		}
	}
	return offers, failed
}
