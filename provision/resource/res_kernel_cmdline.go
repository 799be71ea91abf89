package resource

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/spec"
)

// kernelCmdlineReads declares what kernel_cmdline reads back on a node: the
// pending marker of an interrupted write (in pendingDir) and its grub.d
// drop-in.
func kernelCmdlineReads() facts.Reads {
	return facts.Reads{ManagedFiles: []string{GrubDropIn}, ManagedDirs: []string{pendingDir}}
}

// buildKernelCmdline adds the spec's kernel arguments, and those 1 GiB huge
// pages need, to the boot configuration. It is always planned: with none
// wanted, it removes what gpuform added earlier.
func buildKernelCmdline(in *buildInput) ([]Resource, []string, error) {
	r, err := kernelCmdline(in.n, in.f, in.family, hugepagesBootArgs(in.n))
	if err != nil {
		return nil, nil, err
	}
	return []Resource{r}, nil, nil
}

// kernelCmdline adds arguments to the kernel command line through a GRUB
// drop-in; the change takes effect at the next boot. Several specs may
// share the drop-in, each owning the argument names it declares (see
// keyShare): a spec's arguments stay one run, in its order (hugepages=
// applies to the hugepagesz= before it), where its first one was, and
// every other argument keeps its place.
func kernelCmdline(n *spec.Node, f *facts.Node, family string, extra []string) (*fileResource, error) {
	var args []string
	for _, a := range n.KernelArgs {
		args = append(args, a.V)
	}
	args = append(args, extra...)
	want := map[string]string{}
	for _, a := range args {
		if err := check(kernelArgPattern, "kernel argument", a); err != nil {
			return nil, err
		}
		want[kernelArgName(a)] = ""
	}
	curText, curExists := f.ManagedFile(GrubDropIn)
	var curArgs []string
	if curExists {
		curArgs = strings.Fields(dropInArgs(curText))
	}
	var fileKeys []string
	for _, a := range curArgs {
		if k := kernelArgName(a); !slices.Contains(fileKeys, k) {
			fileKeys = append(fileKeys, k)
		}
	}
	slices.Sort(fileKeys)
	share := shareOf(n.Owner, f, KernelCmdline, fileKeys)
	drop := share.drop(want)
	kept := share.kept(fileKeys, want)
	// mine reports whether argument a is this spec's to set or remove.
	mine := func(a string) bool {
		k := kernelArgName(a)
		_, declared := want[k]
		return declared || slices.Contains(drop, k)
	}
	final := args
	if share.claims && len(kept) > 0 {
		final = nil
		placed := false
		for _, a := range curArgs {
			if !mine(a) {
				final = append(final, a)
			} else if !placed {
				final = append(final, args...)
				placed = true
			}
		}
		if !placed {
			final = append(final, args...)
		}
	}
	line := func(args []string) string {
		// Appending to GRUB_CMDLINE_LINUX keeps the distribution's own
		// arguments; /etc/default/grub.d/*.cfg is sourced after
		// /etc/default/grub by update-grub on Debian and Ubuntu.
		return `GRUB_CMDLINE_LINUX="$GRUB_CMDLINE_LINUX ` + strings.Join(args, " ") + `"` + "\n"
	}
	content := ""
	var edit func(cur []byte, exists bool) (string, error)
	switch {
	case share.claims && len(kept) > 0:
		content = "wanted"
		edit = func(cur []byte, _ bool) (string, error) {
			if string(cur) != curText {
				return "", fmt.Errorf("the drop-in was not read byte for byte, so gpuform will not edit the kernel arguments of other specs in it; probe again")
			}
			if len(args) == 0 && len(drop) == 0 {
				return string(cur), nil
			}
			hdr := share.header(slices.Sorted(maps.Keys(want)), fileKeys, nil, "")
			if hdr == "" {
				hdr = managedHeader
			}
			return hdr + line(final), nil
		}
	case len(args) > 0:
		content = header(n) + line(args)
	}
	// The generated boot configuration is not probed, so regenerating it
	// is part of the step that writes the drop-in.
	regen := updateGrub()
	var regenFor func(cur string, exists bool) (effect, error)
	if family == FamilyRHEL {
		// RHEL's grub2-mkconfig does not read grub.d drop-ins; grubby edits
		// every installed kernel's boot entry instead, so arguments the
		// previous drop-in added and the spec dropped are removed there
		// by name (the drop-in is gpuform's record of what it added).
		regen = effect{}
		regenFor = func(cur string, exists bool) (effect, error) {
			wantArg := map[string]bool{}
			for _, a := range args {
				wantArg[a] = true
			}
			want := wantArg
			var removed []string
			if exists {
				for _, a := range strings.Fields(dropInArgs(cur)) {
					if err := check(kernelArgPattern, "kernel argument", a); err != nil {
						return effect{}, err
					}
					// Another spec's arguments, or nobody's, stay.
					if !want[a] && (!share.claims || mine(a)) {
						removed = append(removed, a)
					}
				}
			}
			if len(removed) == 0 && len(args) == 0 {
				return effect{}, nil
			}
			return grubbyArgs(strings.Join(removed, " "), strings.Join(args, " ")), nil
		}
	}
	desired := map[string]string{"args": strings.Join(args, " ")}
	if share.claims && len(args) == 0 && len(drop) == 0 {
		// Nothing of this spec's here: no change to show.
		desired = nil
	}
	return &fileResource{
		base:    base{name: KernelCmdline},
		path:    GrubDropIn,
		content: content,
		edit:    edit,
		keyed:   share.keyedFile(want, fileKeys),
		current: managedFile(GrubDropIn),
		// The plan shows the spec's own arguments; without an owner,
		// all of the drop-in's (all of them are the spec's).
		attrs: textAttrs(func(f *facts.Node, cur string, exists bool) map[string]string {
			if desired == nil {
				return nil
			}
			if !exists {
				return map[string]string{"args": ""}
			}
			if !share.claims {
				return map[string]string{"args": dropInArgs(cur)}
			}
			var own []string
			for _, a := range strings.Fields(dropInArgs(cur)) {
				if mine(a) {
					own = append(own, a)
				}
			}
			return map[string]string{"args": strings.Join(own, " ")}
		}),
		desired: stringVals(desired),
		live: func(f *facts.Node) bool {
			for _, a := range args {
				name, val, hasVal := strings.Cut(a, "=")
				got, ok := f.Kernel.Arg(name)
				if !ok || (hasVal && got != val) {
					return false
				}
			}
			return true
		},
		then:    regen,
		thenFor: regenFor,
		reboot:  true,
	}, nil
}

// kernelArgName is the name of kernel argument a, the key a spec owns
// ("hugepagesz" of "hugepagesz=1G").
func kernelArgName(a string) string {
	name, _, _ := strings.Cut(a, "=")
	return name
}

// dropInArgs reads the arguments gpuform's GRUB drop-in appends.
func dropInArgs(content string) string {
	v := content
	if i := strings.Index(v, "$GRUB_CMDLINE_LINUX "); i >= 0 {
		v = v[i+len("$GRUB_CMDLINE_LINUX "):]
	}
	v, _, _ = strings.Cut(v, `"`)
	return strings.TrimSpace(v)
}
