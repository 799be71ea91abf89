package facts

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/gpuform/gpuform/internal/text"
	"github.com/gpuform/gpuform/provision/transport"
)

// availableScript lists, as "NAME VERSION" lines, every version of the
// packages named in $GPUFORM_PACKAGES that the host's package manager can
// install, from its repository lists as they are (it refreshes nothing):
// apt-cache madison on Debian/Ubuntu, dnf list --showduplicates from dnf's
// cache on the RHEL family.
const availableScript = `set -f
case $GPUFORM_FAMILY in
debian)
	for n in $GPUFORM_PACKAGES; do
		apt-cache madison "$n" 2>/dev/null | while IFS='|' read -r _ v _; do
			printf '%s %s\n' "$n" "$(printf '%s' "$v" | tr -d ' ')"
		done
	done
	;;
rhel)
	# shellcheck disable=SC2086 # the names are split on purpose
	dnf -q -C list --showduplicates $GPUFORM_PACKAGES 2>/dev/null |
		awk 'NF == 3 && $1 ~ /\./ { n = $1; sub(/\.[^.]*$/, "", n); print n, $2 }'
	;;
esac
`

// Available asks the host's package manager which versions of the named
// packages its repositories offer, for a host of the package family
// ("debian" or "rhel"), and returns them by name in the order the manager
// lists them. It runs one command with the host's become, since a
// hardened host may keep the package lists root-only.
func Available(ctx context.Context, t transport.Transport, family string, names []string, become bool) (map[string][]string, error) {
	for _, n := range names {
		if n == "" || strings.ContainsAny(n, " \t\n'\"\\$`;|&<>*?[") {
			return nil, fmt.Errorf("package name %q", n)
		}
	}
	res, err := t.Run(ctx, transport.Command{Script: availableScript, Become: become, Env: map[string]string{
		"GPUFORM_FAMILY":   family,
		"GPUFORM_PACKAGES": strings.Join(names, " "),
	}})
	if err != nil {
		return nil, err
	}
	if res.ExitCode != 0 {
		return nil, &transport.HostError{Host: t.Host(), Op: "list available packages", Err: fmt.Errorf("exit %d: %s", res.ExitCode, text.FirstLine(string(res.Stderr)))}
	}
	out := map[string][]string{}
	for _, line := range strings.Split(string(res.Stdout), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 || !slices.Contains(names, f[0]) {
			continue
		}
		if !slices.Contains(out[f[0]], f[1]) {
			out[f[0]] = append(out[f[0]], f[1])
		}
	}
	return out, nil
}
