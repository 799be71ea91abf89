package bundle

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gpuform/gpuform/provision/transport"
)

// Group is one repository of a bundle: a node block on one platform, the
// host that resolves it and the releases it needs.
type Group struct {
	// Node is the node block's name.
	Node string
	// Family, OS and Arch are the platform, from the host's facts
	// ("debian", "ubuntu22.04", "amd64").
	Family, OS, Arch string
	// Host is the name of the host that downloads, Become whether its
	// commands run through become.
	Host   string
	Become bool
	// Wanted maps each "name=version" to the lock entry it satisfies.
	Wanted map[string]string
}

// BuildRepo has g's host (reached through tr) download g's releases with
// their dependencies by its own apt or dnf, writes them under out as one
// repository of the bundle (apt's signed by signer; dnf's with the
// metadata createrepo_c wrote on the host, its repomd.xml signed by
// signer), and records every file in m.
func BuildRepo(ctx context.Context, tr transport.Transport, signer *Signer, out string, m *Manifest, g Group) error {
	if g.Family != "debian" && g.Family != "rhel" {
		return fmt.Errorf("host %s runs %s: gpuform bundle builds apt and dnf repositories, not %q ones", g.Host, g.OS, g.Family)
	}
	rel := "repos/" + safeName(g.Node+"-"+g.OS+"-"+g.Arch)
	dir := filepath.Join(out, filepath.FromSlash(rel))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	wanted := slices.Sorted(maps.Keys(g.Wanted))
	if g.Family == "rhel" {
		return buildDnfRepo(ctx, tr, signer, out, rel, m, g, wanted)
	}
	d, err := DownloadApt(ctx, tr, g.Become, wanted, dir)
	if err != nil {
		return err
	}
	if err := WriteAptIndex(dir, d.Records, time.Now()); err != nil {
		return err
	}
	if err := signer.SignRelease(ctx, dir); err != nil {
		return err
	}
	got := make([]Package, len(d.Records))
	for i, r := range d.Records {
		got[i] = Package{Name: r.Name, Version: r.Version, File: r.File}
	}
	repo, err := addDownloaded(out, rel, m, g, wanted, "apt", got, d.URIs)
	if err != nil {
		return err
	}
	if err := m.AddFile(out, rel+"/"+BaseStatus, "the dpkg status of "+g.Host, ""); err != nil {
		return err
	}
	for _, f := range []string{"Packages", "Release", "InRelease"} {
		if err := m.AddFile(out, rel+"/"+f, "gpuform", ""); err != nil {
			return err
		}
	}
	m.Repos = append(m.Repos, repo)
	return nil
}

// addDownloaded records in m the package files tool (apt or dnf)
// downloaded on g's host into the repository at rel (got's files are
// names in it), each with where the tool fetched it and the lock entry it
// satisfies or the dependency it is, and returns the repository; a wanted
// release that did not come is an error.
func addDownloaded(out, rel string, m *Manifest, g Group, wanted []string, tool string, got []Package, uris map[string]string) (Repo, error) {
	repo := Repo{Node: g.Node, Family: g.Family, OS: g.OS, Arch: g.Arch, Dir: rel, Wanted: wanted}
	for _, p := range got {
		satisfies := g.Wanted[p.Name+"="+p.Version]
		if satisfies == "" {
			satisfies = fmt.Sprintf("node %s: a dependency %s resolved on %s", g.Node, tool, g.Host)
		}
		source := uris[p.File]
		if source == "" {
			source = tool + " on " + g.Host
		}
		if err := m.AddFile(out, rel+"/"+p.File, source, satisfies); err != nil {
			return repo, err
		}
		repo.Packages = append(repo.Packages, Package{Name: p.Name, Version: p.Version, File: rel + "/" + p.File})
	}
	if missing := repo.Missing(wanted); len(missing) > 0 {
		return repo, fmt.Errorf("host %s downloaded no %s", g.Host, strings.Join(missing, ", "))
	}
	return repo, nil
}

// buildDnfRepo is BuildRepo for a dnf host: the packages dnf download
// --resolve fetched and the metadata createrepo_c wrote on the host, its
// repomd.xml signed by signer. The
// wanted releases are dnf's "name-version"; the repository's are recorded
// as "name=version" like apt's, so that Missing and the plan's offers
// read them alike.
func buildDnfRepo(ctx context.Context, tr transport.Transport, signer *Signer, out, rel string, m *Manifest, g Group, wanted []string) error {
	specs := make([]string, len(wanted))
	for i, w := range wanted {
		name, v, _ := strings.Cut(w, "=")
		specs[i] = name + "-" + v
	}
	d, err := DownloadDnf(ctx, tr, g.Become, specs, filepath.Join(out, filepath.FromSlash(rel)))
	if err != nil {
		return err
	}
	repo, err := addDownloaded(out, rel, m, g, wanted, "dnf", d.Packages, d.URIs)
	if err != nil {
		return err
	}
	for _, f := range d.Meta {
		if err := m.AddFile(out, rel+"/"+f, "createrepo_c on "+g.Host, ""); err != nil {
			return err
		}
	}
	if d.Base != "" {
		if err := m.AddFile(out, rel+"/"+d.Base, "the rpm database of "+g.Host, ""); err != nil {
			return err
		}
	}
	if err := signer.SignRepomd(ctx, filepath.Join(out, filepath.FromSlash(rel))); err != nil {
		return err
	}
	if err := m.AddFile(out, rel+"/"+RepomdSignature, "gpuform", ""); err != nil {
		return err
	}
	m.Repos = append(m.Repos, repo)
	return nil
}

// safeName keeps a directory name to the characters a bundle path allows.
func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			return r
		}
		return '-'
	}, s)
}
