package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"sort"

	"github.com/spf13/cobra"

	"github.com/gpuform/gpuform/internal/readlimit"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/lockfile"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/spec"
)

func newLockCommand(s Streams) *cobra.Command {
	var flags specFlags
	var conn connectFlags
	var check bool
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

Exit status: 0 the lock file is written (or, with -check, up to date);
1 a version could not be locked; 2 with -check, the lock file would change.`,
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
			var hosts []target.Host
			for _, h := range all {
				if lockfile.NeedsFacts(h.Node) {
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
			lock, diags := lockfile.Resolve(cfg, got)
			if diags.HasErrors() {
				writeDiags(s, diags, cfg)
				return exitError{ExitFailed}
			}
			path := filepath.Join(dir, spec.LockFileName)
			if err := readlimit.LinkLeavesRepository(path); err != nil {
				return err
			}
			old, _ := readlimit.ReadRegularFile(path, spec.MaxFileSize)
			content := spec.FormatLock(lock)
			if bytes.Equal(old, content) {
				fmt.Fprintf(s.Out, "%s is up to date.\n", path)
				return nil
			}
			prev, _, d := spec.LoadLockFile(path)
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
	cmd.Flags().BoolVar(&check, "check", false, "do not write; exit 2 if the lock file would change")
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
	}
	sort.Strings(nodes)
	for _, n := range nodes {
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
