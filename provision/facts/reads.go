package facts

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpuform/gpuform/internal/lazyre"
	"github.com/gpuform/gpuform/provision/transport"
)

// Reads is what one resource type reads back on a node, declared beside
// its diff and its steps (provision/resource's res_<name>.go) so that the
// probe reads exactly what the resources compare with. The probe is driven
// by the union of every type's Reads (Options.Reads); a test in
// provision/resource fails when a resource reads, through Node's
// accessors, something its declaration does not name.
//
// Node facts every resource shares (PCI devices, NUMA, CPUs, RDMA,
// packages, sysctls) are not declared: the probe always reads them.
type Reads struct {
	// ConfigFiles are files gpuform edits in place (an admin's file it
	// owns keys of): read byte-exact with mode, owner and where the path
	// leads, into Node.ConfigFiles (Node.ConfigFile).
	ConfigFiles []string
	// ManagedFiles are files gpuform writes in full: read byte-exact as
	// ConfigFiles are, and also into Node.ManagedFiles (Node.ManagedFile).
	ManagedFiles []string
	// ManagedDirs are directories where the resource writes files with
	// "gpuform" in their name (every file, for /etc/gpuform): each such
	// file is read into Node.ManagedFiles.
	ManagedDirs []string
	// Units are the systemd units whose state the resource reads
	// (Node.Unit), with their suffix ("docker.service").
	Units []string
	// RepoPackages are packages whose versions in apt's lists (the
	// repository candidates) the probe reads into
	// Node.Packages.Available, so that a floating version ("580")
	// resolves to an exact release in the plan. A name may end in
	// "[0-9]+" for every branch's package ("cuda-drivers-[0-9]+").
	RepoPackages []string
}

// Union returns the declarations of r and o together, each list sorted
// and without duplicates.
func (r Reads) Union(o Reads) Reads {
	merge := func(a, b []string) []string {
		out := slices.Concat(a, b)
		slices.Sort(out)
		return slices.Compact(out)
	}
	return Reads{
		ConfigFiles:  merge(r.ConfigFiles, o.ConfigFiles),
		ManagedFiles: merge(r.ManagedFiles, o.ManagedFiles),
		ManagedDirs:  merge(r.ManagedDirs, o.ManagedDirs),
		Units:        merge(r.Units, o.Units),
		RepoPackages: merge(r.RepoPackages, o.RepoPackages),
	}
}

// readPath is a path the probe may be told to read: absolute, clean, of
// characters no shell gives a meaning to unquoted. The probe splits its
// lists on white space, so this is also what keeps a list a list.
var readPath = lazyre.New(`^(/[A-Za-z0-9_.@+-]+)+$`)

// readUnit is a systemd unit name.
var readUnit = lazyre.New(`^[A-Za-z0-9_.@:\\-]+\.(service|socket|timer|mount|target|path)$`)

// repoPackage is a package name, or one ending in "[0-9]+": the probe
// joins them into an awk regular expression, so nothing else may carry a
// meaning there.
var repoPackage = lazyre.New(`^[a-z0-9][a-z0-9.+-]*(\[0-9\]\+)?$`)

// check refuses a declaration the probe could not carry as it is, and one
// that lacks a file the parser requires (requiredReads).
func (r Reads) check() error {
	for _, p := range requiredReads {
		if !slices.Contains(r.ConfigFiles, p) && !slices.Contains(r.ManagedFiles, p) {
			return fmt.Errorf("the declared reads lack %s, which the parser requires (pass resource.Reads())", p)
		}
	}
	for _, list := range [][]string{r.ConfigFiles, r.ManagedFiles, r.ManagedDirs} {
		for _, p := range list {
			if !readPath.MatchString(p) || slices.Contains(strings.Split(p, "/"), "..") || slices.Contains(strings.Split(p, "/"), ".") {
				return fmt.Errorf("declared read %q is not a clean absolute path of [A-Za-z0-9_.@+-/]", p)
			}
		}
	}
	for _, u := range r.Units {
		if !readUnit.MatchString(u) {
			return fmt.Errorf("declared unit %q is not a systemd unit name", u)
		}
	}
	for _, p := range r.RepoPackages {
		if !repoPackage.MatchString(p) {
			return fmt.Errorf("declared repository package %q is not a package name (optionally ending in [0-9]+)", p)
		}
	}
	return nil
}

// shellVars renders r as the shell variables probe.sh loops over, one
// assignment a line, each value a space-separated list (check keeps every
// element free of white space and shell syntax; Quote guards the rest).
func (r Reads) shellVars() string {
	var b strings.Builder
	for _, v := range []struct {
		name string
		list []string
	}{
		{"gpuform_config_files", r.ConfigFiles},
		{"gpuform_managed_files", r.ManagedFiles},
		{"gpuform_managed_dirs", r.ManagedDirs},
		{"gpuform_units", r.Units},
		{"gpuform_repo_packages", r.RepoPackages},
	} {
		fmt.Fprintf(&b, "%s=%s\n", v.name, transport.Quote(strings.Join(v.list, " ")))
	}
	return b.String()
}

// ReadLog records what a Node's accessors for declared reads were asked
// for (ConfigFile, ManagedFile, Unit), by name, so that a test can hold
// each resource to its Reads. A nil *ReadLog records nothing.
type ReadLog struct {
	ConfigFiles  map[string]bool
	ManagedFiles map[string]bool
	Units        map[string]bool
}

func (l *ReadLog) configFile(path string) {
	if l != nil {
		l.ConfigFiles = addName(l.ConfigFiles, path)
	}
}

func (l *ReadLog) managedFile(path string) {
	if l != nil {
		l.ManagedFiles = addName(l.ManagedFiles, path)
	}
}

func (l *ReadLog) unit(name string) {
	if l != nil {
		l.Units = addName(l.Units, name)
	}
}

func addName(set map[string]bool, name string) map[string]bool {
	if set == nil {
		set = map[string]bool{}
	}
	set[name] = true
	return set
}

// Recording returns a shallow copy of n whose accessors for declared reads
// record each name asked for in log; n itself records nothing new.
func (n *Node) Recording(log *ReadLog) *Node {
	c := *n
	c.ReadLog = log
	return &c
}
