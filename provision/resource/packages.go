package resource

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/provision/facts"
)

// Package families.
const (
	// FamilyDebian is apt/dpkg (Debian, Ubuntu).
	FamilyDebian = "debian"
	// FamilyRHEL is dnf/rpm (RHEL, Rocky, Alma, Amazon Linux).
	FamilyRHEL = "rhel"
)

// pkgSet is a group of packages installed together at one version.
type pkgSet struct {
	// names are installed together; the first is the one shown in a plan.
	names []string
	// accept are other names that, when installed at the wanted version,
	// count as the first name being installed (the same driver from
	// Canonical's archive rather than NVIDIA's CUDA repository).
	accept []string
	// want is the upstream version the installed package must have; a
	// bare number is a branch ("550") and any release of it matches.
	want string
	// pins maps each name to the version given to the package manager
	// (apt "name=pin", dnf "name-pin"); "" installs the newest.
	pins map[string]string
	// related are name prefixes of packages that play the same role in
	// another branch or flavour ("cuda-drivers-" for the 535 driver when
	// 550 is wanted); they are shown as the value before the change.
	related []string
	// hold holds the versions after install (apt-mark hold / dnf
	// versionlock), so an unattended upgrade cannot move them.
	hold bool
	// removes are name patterns (path.Match) of installed packages that conflict with
	// the set (another branch's or flavour's driver, another fabric
	// manager) and are removed in the same apt transaction; keep are names
	// among them the set needs.
	removes []string
	keep    []string
	// pinning is an optional package installed with the set when the
	// repository carries it (NVIDIA's nvidia-driver-pinning-<branch>).
	pinning string
	// build, when set, ends every version of the set that may be
	// installed ("+cuda12.4": NCCL built for the spec's CUDA), so that a
	// floating version resolves to the right build.
	build string
}

// pkgResource converges one pkgSet.
type pkgResource struct {
	base
	family   string
	set      pkgSet
	reboot   bool
	restarts []string
	// restartIf, when set, says whether this change restarts them: false
	// when another resource of the same apply restarts them anyway.
	restartIf func(n *facts.Node) bool
	// services are enabled and started after install.
	services []string
	// loaded, when set, reads the version the running system uses (the
	// loaded kernel module), to flag a reboot as pending when it differs.
	loaded func(n *facts.Node) (string, bool)
	// afterReboot, when it reports true, means the services can only start
	// at the next boot (the driver they need is installed, not running):
	// they are enabled and left stopped.
	afterReboot func(n *facts.Node) bool
	// notOffered, when set, is what the install says, and fails with, when
	// the node's repositories do not offer the wanted release: where the
	// packages come from (release files a site mirrors), instead of apt's
	// "version not found".
	notOffered string
	// from is the floating version the spec wrote ("580") when the set's
	// want was resolved to a release of it; "" otherwise.
	from string
	// resolved are the exact versions resolveOffered pinned, by package;
	// unresolved says why a floating version could not be resolved at
	// plan time; missing are the packages the host's repositories do not
	// offer at the release.
	resolved   map[string]string
	unresolved string
	missing    []Missing
}

func (r *pkgResource) deferred(n *facts.Node) bool {
	return r.afterReboot != nil && r.afterReboot(n)
}

// upstream strips an epoch and a package revision: "1:4.6.0-1" → "4.6.0",
// "2.21.5-1+cuda12.4" → "2.21.5".
func upstream(v string) string {
	if i := strings.IndexByte(v, ':'); i >= 0 {
		v = v[i+1:]
	}
	if i := strings.LastIndexByte(v, '-'); i >= 0 {
		v = v[:i]
	}
	return v
}

// versionMatches reports whether installed satisfies want: the same
// upstream release, or, for a bare branch number, any release of the branch.
// A want with a revision ("2.21.5-1") must match the installed version up to
// where want ends.
func versionMatches(installed, want string) bool {
	if want == "" {
		return true
	}
	v := installed
	if i := strings.IndexByte(v, ':'); i >= 0 {
		v = v[i+1:]
	}
	if !strings.ContainsAny(want, ".-") {
		major, _, _ := strings.Cut(v, ".")
		return major == want
	}
	if strings.Contains(want, "-") {
		return v == want || strings.HasPrefix(v, want) && strings.ContainsRune("+~.", rune(v[len(want)]))
	}
	return upstream(installed) == want
}

// installedAs returns which of the names (primary first, then accepted
// alternatives) is installed, and its package.
func (s pkgSet) installedAs(n *facts.Node) (string, facts.Package, bool) {
	for _, name := range append([]string{s.names[0]}, s.accept...) {
		if p, ok := n.Packages.Installed[name]; ok {
			return name, p, true
		}
	}
	return "", facts.Package{}, false
}

func (r *pkgResource) Diff(n *facts.Node) (Change, error) {
	if err := r.validate(); err != nil {
		return Change{}, err
	}
	if fam := n.OS.Family(); fam == "" || fam != r.family {
		return Change{}, fmt.Errorf("%s: the node runs %s, which gpuform cannot install packages on (it knows apt on Debian/Ubuntu and dnf on the RHEL family)", r.name, osName(n))
	}
	after := Values{"package": StringVal(r.set.names[0]), "version": StringVal(r.set.want)}
	if r.set.hold {
		after["held"] = BoolVal(true)
	}
	var before Values
	var converged bool
	// holdOnly stays true while everything differing is a missing hold:
	// holding a package changes nothing that runs, so it needs no reboot.
	var holdOnly bool
	if name, p, ok := r.set.installedAs(n); ok {
		before = Values{"package": StringVal(name), "version": StringVal(upstream(p.Version))}
		if r.set.hold {
			before["held"] = BoolVal(p.Held)
		}
		if versionMatches(p.Version, r.set.want) {
			// Show the installed release when a branch was asked for, so an
			// unchanged resource reads as unchanged.
			after["version"] = before["version"]
			after["package"] = StringVal(name)
		}
		converged = versionMatches(p.Version, r.set.want) && (!r.set.hold || p.Held) && p.State == ""
		holdOnly = versionMatches(p.Version, r.set.want)
	} else {
		converged = false
		holdOnly = false
		for _, prefix := range r.set.related {
			if names := n.PackagesMatching(prefix); len(names) > 0 {
				p := n.Packages.Installed[names[0]]
				before = Values{"package": StringVal(names[0]), "version": StringVal(upstream(p.Version))}
				if r.set.hold {
					before["held"] = BoolVal(p.Held)
				}
				break
			}
		}
	}
	// Every other package of the set must be there at the wanted version.
	var missing []string
	for _, name := range r.set.names[1:] {
		p, ok := n.Packages.Installed[name]
		if !ok || p.State != "" || !versionMatches(p.Version, r.set.want) || (r.set.hold && !p.Held) {
			missing = append(missing, name)
			holdOnly = holdOnly && ok && versionMatches(p.Version, r.set.want)
		}
	}
	if len(r.set.names) > 1 {
		// Each package with its release on both sides: the plan must say
		// from which version to which every member of the set moves.
		var present, wanted []string
		for _, name := range r.set.names {
			p, ok := n.Packages.Installed[name]
			if ok {
				present = append(present, strings.TrimSpace(name+" "+upstream(p.Version)))
			}
			switch {
			case ok && versionMatches(p.Version, r.set.want):
				wanted = append(wanted, strings.TrimSpace(name+" "+upstream(p.Version)))
			default:
				wanted = append(wanted, strings.TrimSpace(name+" "+r.set.want))
			}
		}
		after["packages"] = StringVal(strings.Join(wanted, ", "))
		if before != nil {
			before["packages"] = StringVal(strings.Join(present, ", "))
		}
		if len(missing) > 0 {
			converged = false
		}
	}
	// Packages of another branch or flavour leave in the same transaction:
	// each shows as a removed attribute ("-") before anything runs.
	for _, name := range r.removals(n) {
		if before == nil {
			before = Values{}
		}
		before["package "+name] = StringVal(upstream(n.Packages.Installed[name].Version))
		converged = false
		holdOnly = false
	}
	downgrades := r.downgrades(n)
	deferred := r.deferred(n)
	waiting := false
	for _, svc := range r.services {
		st := n.Unit(svc)
		after["service "+svc] = StringVal("enabled, active")
		if before != nil || st.Enabled != "not-found" {
			if before == nil {
				before = Values{}
			}
			before["service "+svc] = StringVal(st.Enabled + ", " + st.Active)
		}
		switch {
		case st.Enabled != "enabled":
			converged = false
		case st.Active != "active" && deferred:
			waiting = true
		case st.Active != "active":
			converged = false
		}
	}
	c := r.change(before, after)
	if converged {
		c.Action = NoOp
		c.After = before
	} else if c.Action == NoOp {
		c.Action = Update
	}
	if r.loaded != nil {
		// The running module reports the upstream release only.
		wantLoaded, _, _ := strings.Cut(r.set.want, "-")
		if v, ok := r.loaded(n); !ok || !versionMatches(v, wantLoaded) || c.Action != NoOp {
			running := ok && versionMatches(v, wantLoaded)
			c.RebootRequired = c.Action != NoOp && r.reboot && !(running && holdOnly)
			c.RebootPending = c.Action == NoOp && r.reboot
			if c.RebootPending {
				c.PendingReason = pendingReason(before["version"].Text, v, ok)
			}
		}
	} else if c.Action != NoOp {
		c.RebootRequired = r.reboot || waiting || deferred && len(r.services) > 0
	} else if waiting {
		c.RebootPending = true
	}
	if c.Action == NoOp {
		return c, nil
	}
	if r.from != "" && after["version"].Text != r.from {
		c.VersionFrom = r.from
	}
	c.Unresolved = r.unresolved
	if r.needsInstall(n) {
		c.Releases = r.resolved
		c.Missing = r.missing
	}
	if err := r.foreignHolds(n); err != nil {
		return Change{}, err
	}
	if r.restartsNow(n) {
		c.Restarts = r.restarts
	}
	c.Downgrades = downgrades
	steps, err := r.steps(n)
	if err != nil {
		return Change{}, err
	}
	c.Steps = steps
	return c, nil
}

// pendingReason names the release installed and the one running, for a
// plan that would otherwise only say that something waits for a reboot.
func pendingReason(installed, loaded string, isLoaded bool) string {
	if !isLoaded || loaded == "" {
		loaded = "none"
	}
	return installed + " installed, " + loaded + " loaded"
}

func (r *pkgResource) validate() error {
	for _, name := range append(append([]string(nil), r.set.names...), r.set.accept...) {
		if err := check(packageNamePattern, "package name", name); err != nil {
			return err
		}
	}
	for _, pin := range r.set.pins {
		if pin != "" {
			if err := check(pinPattern, "version", pin); err != nil {
				return err
			}
		}
	}
	return nil
}

// steps installs the set at its pinned versions and holds it. Nothing is
// unheld first: apt changes a held package named on its command line with
// --allow-change-held-packages, so a failed install leaves every hold as it
// was; dnf's version locks are removed for the install and put back when
// it fails.
func (r *pkgResource) steps(n *facts.Node) ([]Step, error) {
	var steps []Step
	remove := r.removals(n)
	needInstall := r.needsInstall(n)
	if needInstall {
		steps = append(steps, r.installStep(remove...))
	}
	if r.set.hold {
		var unheld []string
		for _, name := range r.set.names {
			if needInstall || !n.PackageHeld(name) {
				unheld = append(unheld, name)
			}
		}
		if len(unheld) > 0 {
			steps = append(steps, r.holdStep(unheld))
		}
	}
	if r.restartsNow(n) {
		// A service that loads the packages' files when it starts (slurmd
		// and pyxis's plugin) runs the new release only once restarted;
		// try-restart leaves a stopped one stopped.
		for _, svc := range r.restarts {
			if err := check(unitPattern, "unit name", svc); err != nil {
				return nil, err
			}
			steps = append(steps, systemdUnitStep("restart "+svc+" if it runs", unitTryRestart, svc))
		}
	}
	deferred := r.deferred(n)
	for _, svc := range r.services {
		st := n.Unit(svc)
		if st.Enabled == "enabled" && (st.Active == "active" || deferred) && !needInstall {
			continue
		}
		s, err := unitStep(svc, !deferred)
		if err != nil {
			return nil, err
		}
		steps = append(steps, s)
	}
	return steps, nil
}

// restartsNow reports that the change restarts r.restarts: it installs
// something (holding a package restarts nothing) and no other resource
// restarts them.
func (r *pkgResource) restartsNow(n *facts.Node) bool {
	return len(r.restarts) > 0 && r.needsInstall(n) && (r.restartIf == nil || r.restartIf(n))
}

// needsInstall reports that the package manager must run: a package of the
// set missing, half installed or at another release, or one to remove.
// (Only a missing hold needs no install.)
func (r *pkgResource) needsInstall(n *facts.Node) bool {
	if len(r.removals(n)) > 0 {
		return true
	}
	for _, name := range r.set.names {
		p, ok := n.Packages.Installed[name]
		if !ok || p.State != "" || !versionMatches(p.Version, r.set.want) {
			return true
		}
	}
	return false
}

// downgrades lists the set's packages that will move to an older release,
// as "name 580.95.05 -> 580.65.06": apt installs them only with
// --allow-downgrades, and the plan says so before anything runs.
func (r *pkgResource) downgrades(n *facts.Node) []string {
	if !exactRelease(r.set.want) {
		return nil
	}
	want := upstream(r.set.want)
	if !strings.Contains(r.set.want, "-") {
		want = r.set.want
	}
	var out []string
	for _, name := range r.set.names {
		p, ok := n.Packages.Installed[name]
		if ok && !versionMatches(p.Version, r.set.want) && cmpRelease(upstream(p.Version), want) > 0 {
			out = append(out, name+" "+upstream(p.Version)+" -> "+want)
		}
	}
	return out
}

// cmpRelease compares dotted releases part by part, numerically where both
// parts are numbers: "580.95.05" > "580.65.06", "2.21.5" > "2.20.5".
func cmpRelease(a, b string) int {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(pa) && i < len(pb); i++ {
		x, errx := strconv.Atoi(pa[i])
		y, erry := strconv.Atoi(pb[i])
		switch {
		case errx == nil && erry == nil && x != y:
			if x < y {
				return -1
			}
			return 1
		case (errx != nil || erry != nil) && pa[i] != pb[i]:
			return strings.Compare(pa[i], pb[i])
		}
	}
	return len(pa) - len(pb)
}

// aptHoldsFile records the packages gpuform put on hold, so that a hold
// someone else set is told from gpuform's own (facts.Packages.GpuformHolds).
const aptHoldsFile = stateDir + "/apt-holds"

// foreignHolds refuses a change to a package someone other than gpuform put
// on hold: the hold is theirs, and overriding it needs the operator's
// consent, which is to lift it (apt-mark unhold) before planning again.
func (r *pkgResource) foreignHolds(n *facts.Node) error {
	if r.family != FamilyDebian {
		return nil
	}
	owned := map[string]bool{}
	for _, name := range n.Packages.GpuformHolds {
		owned[name] = true
	}
	var foreign []string
	check := func(name string, changes bool) {
		p, ok := n.Packages.Installed[name]
		if ok && p.Held && changes && !owned[name] {
			foreign = append(foreign, name+" "+upstream(p.Version))
		}
	}
	for _, name := range append([]string{r.set.names[0]}, r.set.accept...) {
		if p, ok := n.Packages.Installed[name]; ok {
			check(name, p.State != "" || !versionMatches(p.Version, r.set.want))
		}
	}
	for _, name := range r.set.names[1:] {
		if p, ok := n.Packages.Installed[name]; ok {
			check(name, p.State != "" || !versionMatches(p.Version, r.set.want))
		}
	}
	for _, name := range r.removals(n) {
		check(name, true)
	}
	if len(foreign) == 0 {
		return nil
	}
	names := make([]string, len(foreign))
	for i, f := range foreign {
		names[i], _, _ = strings.Cut(f, " ")
	}
	return fmt.Errorf("%s: %s held by someone other than gpuform (gpuform records its own holds in %s); gpuform does not override another's hold. To let gpuform change %s, lift the hold on the node (apt-mark unhold %s) and plan again",
		r.name, strings.Join(foreign, ", "), aptHoldsFile, plural(len(foreign), "it", "them"), strings.Join(names, " "))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// resolveDriverRelease turns a floating driver version (a branch, "580")
// into the release gpuform installs, so that the plan shows it and fabric
// manager gets exactly that release: the branch's release already installed
// (a floating spec never moves a converged node), else the newest release
// of the branch in apt's lists or offered by the host's repositories
// (facts.Offers, asked by plan). An exact version, or one nothing resolves,
// is returned as it is.
func resolveDriverRelease(k *kb.KB, family, flavour, version string, f *facts.Node) string {
	if exactRelease(version) || family != FamilyDebian && f.Offers == nil {
		return version
	}
	s := driverSet(k, family, flavour, version)
	if _, p, ok := s.installedAs(f); ok && versionMatches(p.Version, version) {
		return upstream(p.Version)
	}
	best := ""
	offered := f.Packages.Available[s.names[0]]
	if f.Offers != nil {
		// What the package manager said (plan asked it) is what apply's
		// install picks from; a saved plan narrows it to its release.
		offered = f.Offers.Versions[s.names[0]]
	}
	for _, v := range offered {
		if versionMatches(v, version) && (best == "" || cmpRelease(upstream(v), best) > 0) {
			best = upstream(v)
		}
	}
	if best == "" {
		return version
	}
	return best
}

// removals returns the installed packages that play the set's role in
// another branch or flavour (set.removes) and must leave in the same
// transaction: apt will not remove a held package to resolve a conflict,
// but removes one named with a trailing '-' on the install command line.
// dnf's --allowerasing removes them itself; gpuform lifts their version
// locks, which would otherwise outlive them and hide other releases of
// their names.
func (r *pkgResource) removals(n *facts.Node) []string {
	keep := map[string]bool{}
	for _, name := range append(append([]string(nil), r.set.names...), r.set.keep...) {
		keep[name] = true
	}
	var out []string
	for _, name := range slices.Sorted(maps.Keys(n.Packages.Installed)) {
		for _, pattern := range r.set.removes {
			if ok, _ := path.Match(pattern, name); ok && !keep[name] && !containsStr(out, name) {
				out = append(out, name)
			}
		}
	}
	sort.Strings(out)
	return out
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// installStep is one package manager transaction (scripts/apt_install.sh,
// scripts/dnf_install.sh): every package of the set at its exact version
// and, for apt, the packages the set's packages depend on with "=" (a
// driver meta package's kernel module package), and every package in
// remove with apt's trailing '-'.
func (r *pkgResource) installStep(remove ...string) Step {
	if r.family != FamilyDebian {
		return r.dnfInstallStep(remove)
	}
	var specs, removed []string
	hold := ""
	if r.set.hold {
		hold = "hold"
	}
	args := []string{strconv.Itoa(aptLockTimeout), hold, r.set.pinning, r.notOffered, aptHoldsFile}
	for _, name := range r.set.names {
		pin := r.set.pins[name]
		if pin == "" {
			pin = "*"
		}
		args = append(args, name, pin)
		specs = append(specs, specFor(r.family, name, r.set.pins[name]))
	}
	args = append(args, "--")
	for _, name := range remove {
		args = append(args, name)
		removed = append(removed, name)
	}
	return scriptStep(installText(specs, r.set.pinning, removed), aptInstallScript, args...)
}

// installText says what an install step does as one clause a person
// reads: "install nvidia-open=580.159.03-0ubuntu1 (and
// nvidia-driver-pinning-580 where the repository offers it), removing
// cuda-drivers-535".
func installText(specs []string, pinning string, removed []string) string {
	s := "install " + listText(specs)
	if pinning != "" {
		s += " (and " + pinning + " where the repository offers it)"
	}
	if len(removed) > 0 {
		s += ", removing " + listText(removed)
	}
	return s
}

// listText joins names as a sentence lists them: "a", "a and b",
// "a, b and c".
func listText(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// specFor is the package manager's name-and-version argument.
func specFor(family, name, pin string) string {
	switch {
	case pin == "":
		return name
	case family == FamilyDebian:
		return name + "=" + pin
	}
	return name + "-" + pin
}

// dnfInstallStep installs the set with dnf. Version locks on the set's
// packages (held or not: a lock outlives the package it names) and on the
// packages --allowerasing will remove are lifted for the transaction; the
// ones that were there are put back when it fails.
func (r *pkgResource) dnfInstallStep(remove []string) Step {
	var specs []string
	for _, name := range r.set.names {
		specs = append(specs, specFor(r.family, name, r.set.pins[name]))
	}
	args := append(append([]string{r.notOffered}, specs...), "--")
	args = append(append(args, r.set.names...), remove...)
	return scriptStep(installText(specs, "", remove), dnfInstallScript, args...)
}

func (r *pkgResource) holdStep(names []string) Step {
	if r.family == FamilyDebian {
		return scriptStep("hold "+listText(names), aptHoldScript, append([]string{aptHoldsFile}, names...)...)
	}
	return scriptStep("version-lock "+listText(names), dnfVersionlockScript, names...)
}

func osName(n *facts.Node) string {
	if n.OS.Pretty != "" {
		return n.OS.Pretty
	}
	if n.OS.ID != "" {
		return n.OS.ID + " " + n.OS.VersionID
	}
	return "an unknown distribution"
}

// aptLockTimeout is how long, in seconds, apt and dpkg wait for another
// package manager (unattended-upgrades, a killed apply's dpkg) to release
// the dpkg lock.
const aptLockTimeout = 120
