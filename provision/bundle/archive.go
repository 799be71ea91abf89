package bundle

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gpuform/gpuform/internal/readlimit"
)

// IsArchive says whether a bundle path names a tarball (.tar, .tar.gz,
// .tgz) rather than a directory.
func IsArchive(p string) bool {
	return strings.HasSuffix(p, ".tar") || gzipped(p)
}

func gzipped(p string) bool { return strings.HasSuffix(p, ".tar.gz") || strings.HasSuffix(p, ".tgz") }

// archiveTime is every entry's modification time: the Unix epoch, so that
// a tarball of the same bundle is the same bytes whenever it is written.
var archiveTime = time.Unix(0, 0).UTC()

// WriteArchive writes the bundle in dir as the tarball dest (gzipped for
// .tar.gz and .tgz): the manifest first, then every file it lists in
// its (sorted) order, as regular files of mode 0644 owned by 0:0 with
// archiveTime, no directory entries, no other file of dir. The same
// bundle makes the same bytes. dest is written under a temporary name
// and renamed into place.
func WriteArchive(dir, dest string) (err error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return err
	}
	tmp := dest + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	defer func() {
		f.Close()
		if err != nil {
			os.Remove(tmp)
		}
	}()
	buf := bufio.NewWriterSize(f, 1<<20)
	var w io.Writer = buf
	var z *gzip.Writer
	if gzipped(dest) {
		z = gzip.NewWriter(buf)
		w = z
	}
	tw := tar.NewWriter(w)
	for _, p := range append([]string{ManifestName}, filePaths(m)...) {
		if err := addToArchive(tw, dir, p); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if z != nil {
		if err := z.Close(); err != nil {
			return err
		}
	}
	if err := buf.Flush(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, dest)
}

func filePaths(m *Manifest) []string {
	out := make([]string, len(m.Files))
	for i, f := range m.Files {
		out[i] = f.Path
	}
	return out
}

func addToArchive(tw *tar.Writer, dir, p string) error {
	f, err := os.Open(filepath.Join(dir, filepath.FromSlash(p)))
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("the bundle file %s is not a regular file", p)
	}
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: p, Mode: 0o644, Size: fi.Size(), ModTime: archiveTime, Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	n, err := io.Copy(tw, f)
	if err != nil {
		return err
	}
	if n != fi.Size() {
		return fmt.Errorf("the bundle file %s changed while it was written", p)
	}
	return nil
}

// ExtractArchive extracts the bundle tarball archive into dir, a new
// empty directory, refusing what a bundle never holds: its manifest
// (read first, within MaxManifest) names every other entry, each a
// regular file at a plain relative path (CheckPath), once, and of at most
// the size the manifest gives it; a link, a device, a directory entry, a
// path leaving dir, an entry the manifest does not list or one larger
// than listed is refused, and so is a tarball that ends before every
// listed file came. Nothing is followed or overwritten. The files'
// hashes are Verify's to check, afterwards.
func ExtractArchive(archive, dir string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	var r io.Reader = bufio.NewReaderSize(f, 1<<20)
	if gzipped(archive) {
		z, err := gzip.NewReader(r)
		if err != nil {
			return fmt.Errorf("the bundle %s: %w", archive, err)
		}
		defer z.Close()
		r = z
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("the bundle %s: "+format+"; it is not a tarball gpuform bundle wrote", append([]any{archive}, args...)...)
	}
	tr := tar.NewReader(r)
	var sizes map[string]int64
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("the bundle %s: %w", archive, err)
		}
		if hdr.Typeflag != tar.TypeReg {
			return bad("the entry %q is not a regular file (type %q)", hdr.Name, hdr.Typeflag)
		}
		if err := CheckPath(hdr.Name); err != nil {
			return bad("%v", err)
		}
		if sizes == nil {
			if hdr.Name != ManifestName {
				return bad("the first entry is %q, not %s", hdr.Name, ManifestName)
			}
			if hdr.Size > MaxManifest {
				return bad("its manifest is larger than %s", readlimit.FormatSize(MaxManifest))
			}
			if err := extractFile(tr, dir, hdr.Name, hdr.Size); err != nil {
				return err
			}
			m, err := ReadManifest(dir)
			if err != nil {
				return err
			}
			sizes = map[string]int64{}
			var total int64
			for _, fe := range m.Files {
				sizes[fe.Path] = fe.Size
				total += fe.Size
			}
			// The manifest bounds what the tarball may write (a gzip
			// of zeros expands only to the sizes it lists); that bound
			// is checked against the room there is before any of it is
			// written, so a bundle too large for dir is refused at once
			// instead of filling the disk.
			if free, ok := freeSpace(dir); ok && total > free {
				return fmt.Errorf("the bundle %s needs %.1f GiB to extract, and %s has %.1f GiB free", archive, gib(total), dir, gib(free))
			}
			continue
		}
		size, ok := sizes[hdr.Name]
		switch {
		case !ok:
			return bad("the entry %q is not a file its manifest lists, or comes twice", hdr.Name)
		case hdr.Size > size:
			return bad("the entry %q is %d bytes, its manifest says %d", hdr.Name, hdr.Size, size)
		}
		delete(sizes, hdr.Name)
		if err := extractFile(tr, dir, hdr.Name, hdr.Size); err != nil {
			return err
		}
	}
	if sizes == nil {
		return bad("it holds no %s", ManifestName)
	}
	for p := range sizes {
		return bad("it ends without %s, which its manifest lists (truncated?)", p)
	}
	return nil
}

func gib(n int64) float64 { return float64(n) / (1 << 30) }

// extractFile writes the tar entry's size bytes as dir/p, a new file in
// directories it makes (never through a link: every path is checked, and
// only regular files are written).
func extractFile(r io.Reader, dir, p string, size int64) error {
	dest := filepath.Join(dir, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(dest, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	n, err := io.Copy(out, io.LimitReader(r, size))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("extracting %s: %w", p, err)
	}
	if n != size {
		return fmt.Errorf("extracting %s: %d of %d bytes (the tarball is truncated)", p, n, size)
	}
	return nil
}
