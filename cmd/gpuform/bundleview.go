package main

import (
	"encoding/json"
	"io"
	"sort"
	"strings"

	"github.com/gpuform/gpuform/internal/jsonformat"
	"github.com/gpuform/gpuform/provision/bundle"
)

// bundleDocument is gpuform bundle -format json: what the bundle holds,
// repository by repository, and its size. The manifest in the bundle has
// every file; this is its summary.
type bundleDocument struct {
	FormatVersion string `json:"format_version"`
	// Bundle is the -out path: a directory or a tarball.
	Bundle string `json:"bundle"`
	// Lock is the sha256 of the lock file it was built for, "" for none.
	Lock   string           `json:"lock_sha256"`
	Repos  []bundleRepoJSON `json:"repos"`
	Images []bundle.Image   `json:"images"`
	Files  int              `json:"files"`
	Bytes  int64            `json:"bytes"`
}

type bundleRepoJSON struct {
	Node   string `json:"node"`
	Family string `json:"family"`
	OS     string `json:"os"`
	Arch   string `json:"arch"`
	Dir    string `json:"dir"`
	// Releases are the releases the plan installs ("name=version").
	Releases []string `json:"releases"`
	// Packages is how many package files the repository holds: the
	// releases and their dependency closure.
	Packages int `json:"packages"`
	// Bytes is the size of the repository's files.
	Bytes int64 `json:"bytes"`
}

func writeBundleJSON(w io.Writer, out string, m *bundle.Manifest) error {
	doc := bundleDocument{FormatVersion: jsonformat.Version, Bundle: out, Lock: m.Lock, Repos: []bundleRepoJSON{}, Images: m.Images, Files: len(m.Files)}
	if doc.Images == nil {
		doc.Images = []bundle.Image{}
	}
	repos := append([]bundle.Repo(nil), m.Repos...)
	sort.SliceStable(repos, func(i, j int) bool { return repos[i].Dir < repos[j].Dir })
	for _, f := range m.Files {
		doc.Bytes += f.Size
	}
	for _, r := range repos {
		rj := bundleRepoJSON{Node: r.Node, Family: r.Family, OS: r.OS, Arch: r.Arch, Dir: r.Dir, Releases: r.Wanted, Packages: len(r.Packages)}
		if rj.Releases == nil {
			rj.Releases = []string{}
		}
		for _, f := range m.Files {
			if strings.HasPrefix(f.Path, r.Dir+"/") {
				rj.Bytes += f.Size
			}
		}
		doc.Repos = append(doc.Repos, rj)
	}
	return writeBundleDoc(w, doc)
}

// bundleCheckDocument is gpuform bundle -check -format json: each
// repository's verdict, and the bundle's.
type bundleCheckDocument struct {
	FormatVersion string `json:"format_version"`
	Bundle        string `json:"bundle"`
	// Closed is true when every repository is.
	Closed bool                  `json:"closed"`
	Repos  []bundleCheckRepoJSON `json:"repos"`
}

type bundleCheckRepoJSON struct {
	Node   string `json:"node"`
	Family string `json:"family"`
	OS     string `json:"os"`
	Arch   string `json:"arch"`
	Dir    string `json:"dir"`
	Closed bool   `json:"closed"`
	// Releases is how many releases were checked, Installs how many
	// packages the package manager would install for them.
	Releases int `json:"releases"`
	Installs int `json:"installs"`
	// Problems are the package manager's words for each release that
	// does not install from the bundle alone.
	Problems []string `json:"problems"`
}

func writeBundleCheckJSON(w io.Writer, path string, results []*bundle.CheckResult) (bool, error) {
	doc := bundleCheckDocument{FormatVersion: jsonformat.Version, Bundle: path, Closed: true, Repos: []bundleCheckRepoJSON{}}
	for _, r := range results {
		rj := bundleCheckRepoJSON{Node: r.Repo.Node, Family: r.Repo.Family, OS: r.Repo.OS, Arch: r.Repo.Arch, Dir: r.Repo.Dir,
			Closed: len(r.Problems) == 0, Releases: len(r.Repo.Wanted), Installs: r.Installs, Problems: r.Problems}
		if rj.Problems == nil {
			rj.Problems = []string{}
		}
		doc.Closed = doc.Closed && rj.Closed
		doc.Repos = append(doc.Repos, rj)
	}
	return doc.Closed, writeBundleDoc(w, doc)
}

func writeBundleDoc(w io.Writer, v any) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(v)
}
