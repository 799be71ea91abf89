package bundle

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gpuform/gpuform/internal/lazyre"
	"github.com/gpuform/gpuform/provision/nodesh"
	"github.com/gpuform/gpuform/provision/transport"
)

var (
	//go:embed scripts/apt_download.sh
	aptDownloadScript string
	//go:embed scripts/fetch.sh
	fetchScript string
	//go:embed scripts/cleanup.sh
	cleanupScript string
	//go:embed scripts/dnf_download.sh
	dnfDownloadScript string
)

// BaseStatus is, in a repository's directory, the dpkg status of the host
// that resolved it: the installed packages its dependency closure was
// resolved against.
const BaseStatus = "base.status"

// BaseRPMDB is, in a dnf repository's directory, the rpm database of the
// host that resolved it (rpmdb --exportdb, gzipped): the installed
// packages dnf download --resolve left out of the closure.
const BaseRPMDB = "base.rpmdb.gz"

// CheckOnly says whether a file of a repository is there for bundle
// -check only (BaseStatus, BaseRPMDB): apply does not copy it to nodes.
func CheckOnly(p string) bool {
	b := path.Base(p)
	return b == BaseStatus || b == BaseRPMDB
}

// chunk is what one fetch.sh returns: under transport.MaxStdout.
const chunk = 32 << 20

// releaseSpec is a "name=version" apt takes.
var releaseSpec = lazyre.New(`^[a-z0-9][a-z0-9.+-]*=[A-Za-z0-9.+~:-]+$`)

// debFile is a file name apt downloads (epochs as %3a).
var debFile = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9_.+~%-]*\.deb$`)

// rpmSpec is a "name-version" dnf takes.
var rpmSpec = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9._+-]*-[A-Za-z0-9.+~:_-]+$`)

// rpmFile is a package file dnf download writes; metaFile a file
// createrepo_c writes.
var (
	rpmFile  = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9_.+~-]*\.rpm$`)
	metaFile = lazyre.New(`^repodata/[A-Za-z0-9][A-Za-z0-9_.-]*$`)
)

// DnfDownloaded is what DownloadDnf brought back.
type DnfDownloaded struct {
	// Packages are the package files, Meta the metadata files (paths
	// under the repository directory).
	Packages []Package
	Meta     []string
	// URIs are the packages' locations in the node's repositories, by
	// file name.
	URIs map[string]string
	// Base is BaseRPMDB when the node's rpm exported its database (rpm
	// 4.16 and later), else "".
	Base string
}

// DownloadDnf has the node's dnf download specs ("name-version") with the
// dependencies the node lacks and write their repository metadata with
// createrepo_c, then copies it all into dest and removes the node's copy.
func DownloadDnf(ctx context.Context, tr transport.Transport, become bool, specs []string, dest string) (*DnfDownloaded, error) {
	for _, s := range specs {
		if !rpmSpec.MatchString(s) {
			return nil, fmt.Errorf("the release %q is not a name-version dnf takes", s)
		}
	}
	res, err := tr.Run(ctx, transport.Command{Script: nodesh.Script(dnfDownloadScript, specs), Become: become})
	if err != nil {
		return nil, err
	}
	out := string(res.Stdout)
	dir, _, _ := strings.Cut(strings.TrimPrefix(out, "@dir "), "\n")
	if strings.HasPrefix(out, "@dir ") {
		defer cleanup(ctx, tr, become, dir) //nolint:errcheck // a download directory left in /var/tmp is harmless
	}
	if res.ExitCode != 0 {
		return nil, &transport.HostError{Host: tr.Host(), Op: "download the packages with dnf", Err: fmt.Errorf("exit %d: %s", res.ExitCode, lastLines(string(res.Stderr), 5))}
	}
	d := &DnfDownloaded{URIs: map[string]string{}}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 2 && f[0] == "@uri":
			d.URIs[f[1][strings.LastIndexByte(f[1], '/')+1:]] = f[1]
		case len(f) == 4 && f[0] == "@record" && rpmFile.MatchString(f[1]):
			d.Packages = append(d.Packages, Package{Name: f[2], Version: f[3], File: f[1]})
		case len(f) == 2 && f[0] == "@meta" && metaFile.MatchString(f[1]):
			d.Meta = append(d.Meta, f[1])
		case len(f) == 2 && f[0] == "@base" && f[1] == BaseRPMDB:
			d.Base = f[1]
		case strings.HasPrefix(line, "@record ") || strings.HasPrefix(line, "@meta "):
			return nil, fmt.Errorf("%s: the download printed %q", tr.Host(), line)
		}
	}
	if err := os.MkdirAll(filepath.Join(dest, "repodata"), 0o755); err != nil {
		return nil, err
	}
	files := append(packageFiles(d.Packages), d.Meta...)
	if d.Base != "" {
		files = append(files, d.Base)
	}
	for _, f := range files {
		if err := fetch(ctx, tr, become, dir+"/"+f, filepath.Join(dest, filepath.FromSlash(f))); err != nil {
			return nil, err
		}
	}
	return d, nil
}

func packageFiles(ps []Package) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.File
	}
	return out
}

// Downloaded is what Download brought back from a node.
type Downloaded struct {
	Records []AptRecord
	// URIs are where apt fetched each file from, by file name.
	URIs map[string]string
}

// DownloadApt has the node's apt download specs ("name=version") with the
// dependencies the node lacks, then copies every file into dest, in
// pieces, and removes the node's copy.
func DownloadApt(ctx context.Context, tr transport.Transport, become bool, specs []string, dest string) (*Downloaded, error) {
	for _, s := range specs {
		if !releaseSpec.MatchString(s) {
			return nil, fmt.Errorf("the release %q is not a package=version apt takes", s)
		}
	}
	res, err := tr.Run(ctx, transport.Command{Script: nodesh.Script(aptDownloadScript, specs), Become: become})
	if err != nil {
		return nil, err
	}
	out := string(res.Stdout)
	dir, _, _ := strings.Cut(strings.TrimPrefix(out, "@dir "), "\n")
	if res.ExitCode != 0 {
		if strings.HasPrefix(out, "@dir ") {
			_ = cleanup(ctx, tr, become, dir)
		}
		return nil, &transport.HostError{Host: tr.Host(), Op: "download the packages with apt", Err: fmt.Errorf("exit %d: %s", res.ExitCode, lastLines(string(res.Stderr), 5))}
	}
	if !strings.HasPrefix(out, "@dir ") {
		return nil, fmt.Errorf("%s: the download printed no directory", tr.Host())
	}
	defer cleanup(ctx, tr, become, dir) //nolint:errcheck // a download directory left in /var/tmp is harmless
	d, err := parseDownload(out)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tr.Host(), err)
	}
	for _, r := range d.Records {
		if err := fetch(ctx, tr, become, dir+"/"+r.File, filepath.Join(dest, r.File)); err != nil {
			return nil, err
		}
	}
	if err := fetch(ctx, tr, become, dir+"/"+BaseStatus, filepath.Join(dest, BaseStatus)); err != nil {
		return nil, err
	}
	return d, nil
}

// parseDownload reads apt_download.sh's output.
func parseDownload(out string) (*Downloaded, error) {
	d := &Downloaded{URIs: map[string]string{}}
	var cur *AptRecord
	for _, line := range strings.SplitAfter(out, "\n") {
		switch {
		case strings.HasPrefix(line, "@dir "):
		case strings.HasPrefix(line, "@uri "):
			f := strings.Fields(line)
			if len(f) == 3 {
				d.URIs[f[2]] = f[1]
			}
		case strings.HasPrefix(line, "@record "):
			f := strings.Fields(line)
			if len(f) != 4 || !debFile.MatchString(f[1]) {
				return nil, fmt.Errorf("the download printed %q", strings.TrimSpace(line))
			}
			d.Records = append(d.Records, AptRecord{File: f[1], Name: f[2], Version: f[3]})
			cur = &d.Records[len(d.Records)-1]
		case cur != nil:
			cur.Control += line
		}
	}
	for _, r := range d.Records {
		if !strings.Contains(r.Control, "Package: "+r.Name+"\n") {
			return nil, fmt.Errorf("apt has no record of %s %s, which it downloaded", r.Name, r.Version)
		}
	}
	return d, nil
}

// fetch copies a node's file into dest in chunks.
func fetch(ctx context.Context, tr transport.Transport, become bool, src, dest string) error {
	f, err := os.Create(dest)
	if err != nil {
		return err
	}
	defer f.Close()
	var total int64
	for i := 0; ; i++ {
		res, err := tr.Run(ctx, transport.Command{Script: nodesh.Script(fetchScript, []string{src, strconv.Itoa(i)}), Become: become})
		if err != nil {
			return err
		}
		if res.ExitCode != 0 {
			return &transport.HostError{Host: tr.Host(), Op: "copy " + src, Err: fmt.Errorf("exit %d: %s", res.ExitCode, lastLines(string(res.Stderr), 3))}
		}
		if _, err := f.Write(res.Stdout); err != nil {
			return err
		}
		total += int64(len(res.Stdout))
		if total > MaxFile {
			return fmt.Errorf("%s: %s is larger than %d bytes", tr.Host(), src, int64(MaxFile))
		}
		if len(res.Stdout) < chunk {
			return f.Close()
		}
	}
}

func cleanup(ctx context.Context, tr transport.Transport, become bool, dir string) error {
	_, err := tr.Run(context.WithoutCancel(ctx), transport.Command{Script: nodesh.Script(cleanupScript, []string{dir}), Become: become})
	return err
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(string(bytes.TrimSpace([]byte(s))), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " / ")
}
