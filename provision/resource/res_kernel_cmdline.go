package resource

import (
	"strings"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/spec"
)

// buildKernelCmdline adds the spec's kernel arguments, and those 1 GiB huge
// pages need, to the boot configuration. It is always planned: with none
// wanted, it removes what gpuform added earlier.
func buildKernelCmdline(in *buildInput) ([]Resource, []string, error) {
	r, err := kernelCmdline(in.n, in.family, hugepagesBootArgs(in.n))
	if err != nil {
		return nil, nil, err
	}
	return []Resource{r}, nil, nil
}

// kernelCmdline adds arguments to the kernel command line through a GRUB
// drop-in; the change takes effect at the next boot.
func kernelCmdline(n *spec.Node, family string, extra []string) (*fileResource, error) {
	var args []string
	for _, a := range n.KernelArgs {
		args = append(args, a.V)
	}
	args = append(args, extra...)
	for _, a := range args {
		if err := check(kernelArgPattern, "kernel argument", a); err != nil {
			return nil, err
		}
	}
	content := ""
	if len(args) > 0 {
		// Appending to GRUB_CMDLINE_LINUX keeps the distribution's own
		// arguments; /etc/default/grub.d/*.cfg is sourced after
		// /etc/default/grub by update-grub on Debian and Ubuntu.
		content = header(n) + `GRUB_CMDLINE_LINUX="$GRUB_CMDLINE_LINUX ` + strings.Join(args, " ") + `"` + "\n"
	}
	// The generated boot configuration is not probed, so regenerating it
	// is part of the step that writes the drop-in.
	regen := "update-grub"
	var regenFor func(cur string, exists bool) (string, error)
	if family == FamilyRHEL {
		// RHEL's grub2-mkconfig does not read grub.d drop-ins; grubby edits
		// every installed kernel's boot entry instead, so arguments the
		// previous drop-in added and the spec dropped are removed there
		// by name (the drop-in is gpuform's record of what it added).
		regen = ""
		regenFor = func(cur string, exists bool) (string, error) {
			want := map[string]bool{}
			for _, a := range args {
				want[a] = true
			}
			var removed []string
			if exists {
				for _, a := range strings.Fields(dropInArgs(cur)) {
					if err := check(kernelArgPattern, "kernel argument", a); err != nil {
						return "", err
					}
					if !want[a] {
						removed = append(removed, a)
					}
				}
			}
			cmd := "grubby --update-kernel=ALL"
			if len(removed) > 0 {
				cmd += " --remove-args=" + q(strings.Join(removed, " "))
			}
			if len(args) > 0 {
				cmd += " --args=" + q(strings.Join(args, " "))
			}
			if len(removed) == 0 && len(args) == 0 {
				return "", nil
			}
			return cmd, nil
		}
	}
	return &fileResource{
		base:    base{name: KernelCmdline},
		path:    GrubDropIn,
		content: content,
		current: managedFile(GrubDropIn),
		attrs: func(f *facts.Node, cur string, exists bool) map[string]string {
			if !exists {
				return attrs{"args": ""}
			}
			return attrs{"args": dropInArgs(cur)}
		},
		desired: attrs{"args": strings.Join(args, " ")},
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

// dropInArgs reads the arguments gpuform's GRUB drop-in appends.
func dropInArgs(content string) string {
	v := content
	if i := strings.Index(v, "$GRUB_CMDLINE_LINUX "); i >= 0 {
		v = v[i+len("$GRUB_CMDLINE_LINUX "):]
	}
	v, _, _ = strings.Cut(v, `"`)
	return strings.TrimSpace(v)
}
