package facts

import (
	"context"
	_ "embed"
	"fmt"
	"slices"
	"strings"

	"github.com/gpuform/gpuform/internal/text"
	"github.com/gpuform/gpuform/provision/transport"
)

// availableScript is offers.sh: it lists, as "NAME VERSION" lines, every
// version of the packages named in $GPUFORM_PACKAGES that the host's
// package manager can install, from its repository lists as they are (it
// refreshes nothing), then "@source" and "@lists" lines saying where they
// come from.
//
//go:embed offers.sh
var availableScript string

// Available asks the host's package manager which versions of the named
// packages its repositories offer, for a host of the package family
// ("debian" or "rhel"), and returns them by name in the order the manager
// lists them. It runs one command with the host's become, since a
// hardened host may keep the package lists root-only.
func Available(ctx context.Context, t transport.Transport, family string, names []string, become bool) (map[string][]string, error) {
	stdout, err := listAvailable(ctx, t, family, names, become)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, line := range strings.Split(stdout, "\n") {
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

// listAvailable runs availableScript on the host for names and returns
// what it printed: the one place Available and QueryOffers reach the host.
func listAvailable(ctx context.Context, t transport.Transport, family string, names []string, become bool) (string, error) {
	if err := checkPackageNames(names); err != nil {
		return "", err
	}
	res, err := t.Run(ctx, transport.Command{Script: availableScript, Become: become, Env: map[string]string{
		"GPUFORM_FAMILY":   family,
		"GPUFORM_PACKAGES": strings.Join(names, " "),
	}})
	if err != nil {
		return "", err
	}
	if res.ExitCode != 0 {
		return "", &transport.HostError{Host: t.Host(), Op: "list available packages", Err: fmt.Errorf("exit %d: %s", res.ExitCode, text.FirstLine(string(res.Stderr)))}
	}
	return string(res.Stdout), nil
}

// Offers is what a host's package manager offers of the packages a plan
// installs, read from the repository metadata the host already has
// (nothing is refreshed): the versions by package name, newest first, and,
// so that a plan can say why a release is missing, where they come from.
type Offers struct {
	// Manager is "apt" or "dnf".
	Manager string `json:"manager"`
	// Versions maps each package name asked about to the versions the
	// manager can install, newest first; a name it offers nothing of is
	// absent.
	Versions map[string][]string `json:"versions"`
	// Sources are the repositories configured on the host, as far as they
	// can be read cheaply: apt's "deb …" lines and deb822 URIs, dnf's
	// "[repo] baseurl=…" (at most 16 of each kind, 200 characters each).
	Sources []string `json:"sources,omitempty"`
	// Lists is how many repository metadata files the manager holds (apt's
	// lists, dnf's cached repodata); 0 means they were never refreshed,
	// and what the repositories offer is not known without the network.
	Lists int `json:"lists"`
}

// Manager names the package manager of a package family.
func Manager(family string) string {
	if family == "rhel" {
		return "dnf"
	}
	return "apt"
}

// checkPackageNames refuses a name the listing's shell would split or
// expand.
func checkPackageNames(names []string) error {
	for _, n := range names {
		if n == "" || strings.ContainsAny(n, " \t\n'\"\\$`;|&<>*?[") {
			return fmt.Errorf("package name %q", n)
		}
	}
	return nil
}

// parseOffers reads offers.sh's output into o: versions of the names asked
// about (any, for nil names), newest first, and the sources and lists
// lines.
func parseOffers(out string, names []string, o *Offers) {
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "@source "):
			o.Sources = append(o.Sources, text.FirstLine(strings.TrimSpace(strings.TrimPrefix(line, "@source "))))
		case strings.HasPrefix(line, "@family "):
			o.Manager = Manager(strings.TrimSpace(strings.TrimPrefix(line, "@family ")))
		case strings.HasPrefix(line, "@lists "):
			_, _ = fmt.Sscan(strings.TrimPrefix(line, "@lists "), &o.Lists) // not a number: no lists counted
		default:
			f := strings.Fields(line)
			if len(f) == 2 && (names == nil || slices.Contains(names, f[0])) && !slices.Contains(o.Versions[f[0]], f[1]) {
				o.Versions[f[0]] = append(o.Versions[f[0]], f[1])
			}
		}
	}
	for name, vs := range o.Versions {
		slices.SortStableFunc(vs, func(a, b string) int { return -CompareVersions(a, b) })
		o.Versions[name] = vs
	}
}

// CompareVersions orders package versions the way the package managers
// do for the versions NVIDIA's repositories carry: the epoch, then the
// upstream release and the revision, each part by part, numerically where
// both parts are numbers ("580.95.05-1" > "580.65.06-1", "1:4.2.3-1" >
// "4.5.0-1").
func CompareVersions(a, b string) int {
	ea, ra := splitEpoch(a)
	eb, rb := splitEpoch(b)
	if c := compareParts(ea, eb); c != 0 {
		return c
	}
	ua, va, _ := cutLast(ra, '-')
	ub, vb, _ := cutLast(rb, '-')
	if c := compareParts(ua, ub); c != 0 {
		return c
	}
	return compareParts(va, vb)
}

func splitEpoch(v string) (string, string) {
	if e, rest, ok := strings.Cut(v, ":"); ok {
		return e, rest
	}
	return "0", v
}

func cutLast(s string, sep byte) (string, string, bool) {
	if i := strings.LastIndexByte(s, sep); i >= 0 {
		return s[:i], s[i+1:], true
	}
	return s, "", false
}

// compareParts compares strings split into runs of digits and of other
// characters, digits numerically.
func compareParts(a, b string) int {
	for a != "" || b != "" {
		pa, ra := nextPart(a)
		pb, rb := nextPart(b)
		da, db := pa != "" && pa[0] >= '0' && pa[0] <= '9', pb != "" && pb[0] >= '0' && pb[0] <= '9'
		switch {
		case da && db:
			x, y := strings.TrimLeft(pa, "0"), strings.TrimLeft(pb, "0")
			if len(x) != len(y) {
				return cmpInt(len(x), len(y))
			}
			if c := strings.Compare(x, y); c != 0 {
				return c
			}
		case pa != pb:
			// "~" sorts before anything, even the end of the version; the
			// end sorts before any other part.
			switch {
			case strings.HasPrefix(pa, "~") != strings.HasPrefix(pb, "~"):
				if strings.HasPrefix(pa, "~") {
					return -1
				}
				return 1
			case pa == "":
				return -1
			case pb == "":
				return 1
			}
			return strings.Compare(pa, pb)
		}
		a, b = ra, rb
	}
	return 0
}

func nextPart(s string) (string, string) {
	if s == "" {
		return "", ""
	}
	digit := s[0] >= '0' && s[0] <= '9'
	i := 1
	for i < len(s) && (s[i] >= '0' && s[i] <= '9') == digit {
		i++
	}
	return s[:i], s[i:]
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
