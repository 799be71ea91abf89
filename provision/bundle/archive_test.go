package bundle

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuform/gpuform/internal/jsonformat"
)

// TestArchiveDeterministicAndRoundTrip: the same bundle makes the same
// tarball bytes (plain and gzipped) whatever its files' times, owners and
// modes; the entries are the manifest, then the listed files sorted, each
// 0644, 0:0, at the epoch; the tarball extracts to a bundle that verifies.
func TestArchiveDeterministicAndRoundTrip(t *testing.T) {
	t.Parallel()
	dir, _ := writeBundle(t)
	for _, name := range []string{"b.tar", "b.tar.gz", "b.tgz"} {
		t.Run(name, func(t *testing.T) {
			out := t.TempDir()
			first := filepath.Join(out, "1-"+name)
			if err := WriteArchive(dir, first); err != nil {
				t.Fatal(err)
			}
			deb := filepath.Join(dir, "repos/n-debian-12-amd64/libnccl2_2.21.5-1+cuda12.4_amd64.deb")
			if err := os.Chtimes(deb, time.Now(), time.Now().Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(deb, 0o600); err != nil {
				t.Fatal(err)
			}
			// A file the manifest does not list stays out.
			if err := os.WriteFile(filepath.Join(dir, "stray"), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			second := filepath.Join(out, "2-"+name)
			if err := WriteArchive(dir, second); err != nil {
				t.Fatal(err)
			}
			a, _ := os.ReadFile(first)
			b, _ := os.ReadFile(second)
			if len(a) == 0 || !bytes.Equal(a, b) {
				t.Fatalf("two tarballs of the same bundle differ (%d and %d bytes)", len(a), len(b))
			}
			var got []string
			r := tarReader(t, first)
			for {
				hdr, err := r.Next()
				if err != nil {
					break
				}
				if hdr.Mode != 0o644 || hdr.Uid != 0 || hdr.Gid != 0 || hdr.Uname != "" || !hdr.ModTime.Equal(time.Unix(0, 0)) || hdr.Typeflag != tar.TypeReg {
					t.Errorf("entry %s: mode %o, owner %d:%d %q, mtime %v, type %q", hdr.Name, hdr.Mode, hdr.Uid, hdr.Gid, hdr.Uname, hdr.ModTime, hdr.Typeflag)
				}
				got = append(got, hdr.Name)
			}
			want := []string{ManifestName, "repos/n-debian-12-amd64/libnccl2_2.21.5-1+cuda12.4_amd64.deb"}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("entries %q, want %q", got, want)
			}
			ext := t.TempDir()
			if err := ExtractArchive(first, ext); err != nil {
				t.Fatal(err)
			}
			m, err := ReadManifest(ext)
			if err != nil {
				t.Fatal(err)
			}
			if err := m.Verify(ext, ""); err != nil {
				t.Error(err)
			}
			os.Remove(filepath.Join(dir, "stray"))
		})
	}
}

func tarReader(t *testing.T, p string) *tar.Reader {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(p, ".tar") {
		return tar.NewReader(bytes.NewReader(b))
	}
	z, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return tar.NewReader(z)
}

// TestExtractArchiveRefuses: a tarball that is not one bundle wrote is
// refused, naming what is wrong, and nothing is written outside the
// extraction directory: paths out (.., absolute), links (symbolic, hard,
// to outside), devices and directories, an entry the manifest does not
// list, one larger than listed, one twice, the manifest not first, a
// tarball cut short.
func TestExtractArchiveRefuses(t *testing.T) {
	t.Parallel()
	dir, m := writeBundle(t)
	manifest, err := os.ReadFile(filepath.Join(dir, ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	deb := m.Files[0].Path
	content := []byte("a package")
	type entry struct {
		hdr  tar.Header
		body []byte
	}
	reg := func(name string, body []byte) entry {
		return entry{tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(body))}, body}
	}
	man := reg(ManifestName, manifest)
	for name, tc := range map[string]struct {
		entries []entry
		cut     int
		want    string
	}{
		"dotdot":         {entries: []entry{man, reg("../escaped", content)}, want: "not a plain relative path"},
		"dotdot inside":  {entries: []entry{man, reg("repos/../../escaped", content)}, want: "not a plain relative path"},
		"absolute":       {entries: []entry{man, reg("/tmp/escaped", content)}, want: "not a plain relative path"},
		"symlink":        {entries: []entry{man, {hdr: tar.Header{Typeflag: tar.TypeSymlink, Name: "repos", Linkname: "/tmp"}}, reg(deb, content)}, want: "is not a regular file"},
		"hardlink":       {entries: []entry{man, {hdr: tar.Header{Typeflag: tar.TypeLink, Name: deb, Linkname: "/etc/passwd"}}}, want: "is not a regular file"},
		"device":         {entries: []entry{man, {hdr: tar.Header{Typeflag: tar.TypeChar, Name: "null", Devmajor: 1, Devminor: 3}}}, want: "is not a regular file"},
		"directory":      {entries: []entry{man, {hdr: tar.Header{Typeflag: tar.TypeDir, Name: "repos/", Mode: 0o755}}}, want: "is not a regular file"},
		"unlisted":       {entries: []entry{man, reg("repos/n-debian-12-amd64/evil.deb", content)}, want: "not a file its manifest lists"},
		"larger":         {entries: []entry{man, reg(deb, append(content, make([]byte, 1<<20)...))}, want: "its manifest says 9"},
		"twice":          {entries: []entry{man, reg(deb, content), reg(deb, content)}, want: "or comes twice"},
		"manifest twice": {entries: []entry{man, reg(deb, content), man}, want: "or comes twice"},
		"manifest later": {entries: []entry{reg(deb, content), man}, want: "the first entry is"},
		"missing file":   {entries: []entry{man}, want: "ends without " + deb},
		"empty":          {want: "holds no " + ManifestName},
		"cut short":      {entries: []entry{man, reg(deb, content)}, cut: 1024 + 510, want: "extracting " + deb},
	} {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			tw := tar.NewWriter(&buf)
			for _, e := range tc.entries {
				hdr := e.hdr
				if err := tw.WriteHeader(&hdr); err != nil {
					t.Fatal(err)
				}
				if _, err := tw.Write(e.body); err != nil {
					t.Fatal(err)
				}
			}
			if err := tw.Close(); err != nil {
				t.Fatal(err)
			}
			b := buf.Bytes()
			if tc.cut > 0 {
				b = b[:len(b)-tc.cut]
			}
			top := t.TempDir()
			archive := filepath.Join(top, "b.tar")
			if err := os.WriteFile(archive, b, 0o644); err != nil {
				t.Fatal(err)
			}
			ext := filepath.Join(top, "x", "y")
			if err := os.MkdirAll(ext, 0o755); err != nil {
				t.Fatal(err)
			}
			err := ExtractArchive(archive, ext)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ExtractArchive = %v, want %q", err, tc.want)
			}
			for _, p := range []string{filepath.Join(top, "escaped"), filepath.Join(top, "x", "escaped"), "/tmp/escaped"} {
				if _, err := os.Lstat(p); err == nil {
					t.Errorf("the tarball wrote %s", p)
				}
			}
		})
	}
}

// TestExtractArchiveRefusesWhatDoesNotFit: a tarball whose manifest lists
// more than the extraction directory's file system has free (here 4,096
// files of MaxFile, 256 TiB: a gzip of zeros would expand to that) is
// refused before any listed file is written, naming what it needs and
// what is free, instead of filling the disk entry by entry.
func TestExtractArchiveRefusesWhatDoesNotFit(t *testing.T) {
	t.Parallel()
	m := &Manifest{FormatVersion: jsonformat.Version}
	for i := range 4096 {
		m.Files = append(m.Files, File{Path: fmt.Sprintf("images/blobs/sha256/%064x", i), SHA256: strings.Repeat("0", 64), Size: MaxFile})
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	z := gzip.NewWriter(&buf)
	tw := tar.NewWriter(z)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: ManifestName, Mode: 0o644, Size: int64(len(b))}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(b); err != nil {
		t.Fatal(err)
	}
	// The first listed file, of zeros, which the check must stop before.
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: m.Files[0].Path, Mode: 0o644, Size: 64 << 20}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(make([]byte, 64<<20)); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	top := t.TempDir()
	archive := filepath.Join(top, "bomb.tar.gz")
	if err := os.WriteFile(archive, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	ext := filepath.Join(top, "x")
	if err := os.Mkdir(ext, 0o755); err != nil {
		t.Fatal(err)
	}
	err = ExtractArchive(archive, ext)
	if err == nil || !strings.Contains(err.Error(), "needs 262144.0 GiB to extract") || !strings.Contains(err.Error(), ext+" has ") {
		t.Errorf("ExtractArchive = %v, want the room it needs and the room there is", err)
	}
	if _, err := os.Stat(filepath.Join(ext, "images")); err == nil {
		t.Errorf("ExtractArchive wrote a listed file before refusing")
	}
}
