package main

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/gpuform/gpuform/internal/gitinfo"
	"github.com/gpuform/gpuform/provision/resource"
	"github.com/gpuform/gpuform/spec"
)

// specOrigin says where this run applies the spec in dir from, for the
// owner records and file headers written on each host: the git remote and
// path with the commit when the spec is in git, its directory otherwise,
// and who runs gpuform where.
func specOrigin(s Streams, dir string, takeOver []string) spec.Origin {
	o := spec.Origin{TakeOver: takeOver}
	if abs, err := filepath.Abs(dir); err == nil {
		o.Source = abs
	}
	if g, ok := gitinfo.Find(dir); ok {
		o.Commit = g.Commit
		repo := g.Remote
		if repo == "" {
			repo = g.Root
		}
		// Terraform's way of naming a folder of a repository.
		o.Source = repo
		if g.Path != "." {
			o.Source += "//" + path.Clean(g.Path)
		}
	}
	user := s.Getenv("USER")
	if user == "" {
		user = s.Getenv("LOGNAME")
	}
	host, _ := os.Hostname()
	switch {
	case user != "" && host != "":
		o.AppliedBy = user + "@" + host
	case host != "":
		o.AppliedBy = host
	default:
		o.AppliedBy = user
	}
	return o
}

// takeOverFlag is -take-over: the resources a run may take from the spec
// that manages them now.
type takeOverFlag struct{ list *[]string }

func (f takeOverFlag) String() string { return strings.Join(*f.list, ",") }
func (f takeOverFlag) Type() string   { return "resource" }
func (f takeOverFlag) Set(v string) error {
	for _, r := range strings.Split(v, ",") {
		r = strings.TrimSpace(r)
		if !resource.IsName(r) {
			return fmt.Errorf("%q is not a resource; one of: %s", r, strings.Join(resource.Names(), ", "))
		}
		*f.list = append(*f.list, r)
	}
	return nil
}

// registerTakeOver adds -take-over to plan and apply.
func (f *specFlags) registerTakeOver(fs *pflag.FlagSet) {
	fs.Var(takeOverFlag{list: &f.takeOver}, "take-over", "take RESOURCE from the spec that manages it on the hosts (repeatable, or a comma list: sysctl,limits)")
}
