package bundle

import (
	"bytes"
	"context"
	"crypto/md5" //nolint:gosec // apt's Release lists MD5Sum beside SHA256; apt checks the SHA256
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/gpuform/gpuform/internal/lazyre"
)

// KeyFile is the bundle's public key (a binary OpenPGP keyring), which a
// node's apt names in signed-by for the bundle's repositories only.
const KeyFile = "keys/bundle.gpg"

// filenameField is a Packages record's Filename line.
var filenameField = lazyre.New(`(?m)^Filename: .*$`)

// AptRecord is one package's record as the node's apt has it (apt-cache
// show NAME=VERSION): the distribution's own metadata, with its Size and
// SHA256 of the file, which the bundle keeps as they are but for Filename.
type AptRecord struct {
	Name, Version string
	// Control is the record's text, one paragraph.
	Control string
	// File is the package file's name in the repository directory.
	File string
}

// WriteAptIndex writes a flat repository's Packages and Release in dir
// for the records, after checking each record's SHA256 against its file:
// apt would refuse the file, and the bundle must not carry it.
func WriteAptIndex(dir string, records []AptRecord, now time.Time) error {
	var idx bytes.Buffer
	for _, r := range records {
		sum, size, err := HashFile(filepath.Join(dir, r.File))
		if err != nil {
			return err
		}
		c := strings.TrimRight(r.Control, "\n")
		if !strings.Contains(c, "\nSHA256: "+sum) {
			return fmt.Errorf("the package %s %s downloaded as %s (sha256 %s, %d bytes) is not the one the repository's index describes", r.Name, r.Version, r.File, sum, size)
		}
		if !filenameField.MatchString(c) {
			return fmt.Errorf("the record of %s %s has no Filename", r.Name, r.Version)
		}
		c = filenameField.Get().ReplaceAllLiteralString(c, "Filename: ./"+r.File)
		idx.WriteString(c + "\n\n")
	}
	packages := idx.Bytes()
	if err := os.WriteFile(filepath.Join(dir, "Packages"), packages, 0o644); err != nil {
		return err
	}
	sum := sha256.Sum256(packages)
	md := md5.Sum(packages) //nolint:gosec // see the import
	release := fmt.Sprintf("Origin: gpuform-bundle\nLabel: gpuform-bundle\nSuite: gpuform-bundle\nCodename: gpuform-bundle\nDate: %s\nDescription: an offline bundle built by gpuform bundle\nMD5Sum:\n %s %d Packages\nSHA256:\n %s %d Packages\n",
		now.UTC().Format(time.RFC1123), hex.EncodeToString(md[:]), len(packages), hex.EncodeToString(sum[:]), len(packages))
	return os.WriteFile(filepath.Join(dir, "Release"), []byte(release), 0o644)
}

// Signer signs repositories with a key made for one bundle, with GnuPG
// (gpg) on this machine: the node's apt checks the signature with gpgv,
// which apt itself depends on, and dnf with the gpgme its librepo links,
// so the node needs nothing new.
type Signer struct {
	home string
}

// NewSigner makes a signing key in a new GnuPG home under tmp and writes
// its public key to the bundle as KeyFile.
func NewSigner(ctx context.Context, tmp, bundleDir string) (*Signer, error) {
	if _, err := exec.LookPath("gpg"); err != nil {
		return nil, fmt.Errorf("signing the bundle's repositories needs gpg (GnuPG) on this machine: %w", err)
	}
	home, err := gnupgHome(tmp)
	if err != nil {
		return nil, err
	}
	s := &Signer{home: home}
	if _, err := s.gpg(ctx, "--quick-gen-key", "gpuform bundle <bundle@gpuform.invalid>", "ed25519", "sign", "never"); err != nil {
		return nil, err
	}
	key, err := s.gpg(ctx, "--export")
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(bundleDir, filepath.Dir(KeyFile)), 0o755); err != nil {
		return nil, err
	}
	return s, os.WriteFile(filepath.Join(bundleDir, KeyFile), key, 0o644)
}

// gnupgSocketRoom is the longest GnuPG home whose agent sockets
// ("S.gpg-agent.browser", the longest name) still fit a Unix socket
// address (108 bytes on Linux, the terminating NUL included). Without
// /run/user/UID, as for root in a container, gpg-agent puts them in the
// home, and a longer path makes it fail with "General error".
const gnupgSocketRoom = 107 - len("/S.gpg-agent.browser")

// gnupgHome makes a new GnuPG home under tmp, or under a shorter
// temporary directory when tmp's path leaves no room for the agent's
// sockets.
func gnupgHome(tmp string) (string, error) {
	const pattern = "gnupg-"
	const suffix = len(pattern) + 12 // MkdirTemp's random part and "/"
	for _, dir := range []string{tmp, os.TempDir(), "/tmp"} {
		if dir == "" || len(dir)+suffix > gnupgSocketRoom {
			continue
		}
		return os.MkdirTemp(dir, pattern)
	}
	return "", fmt.Errorf("no temporary directory with a path short enough for gpg-agent's sockets (%d bytes): set TMPDIR to a shorter one", gnupgSocketRoom-suffix)
}

// SignRelease writes dir's InRelease, the clear-signed Release.
func (s *Signer) SignRelease(ctx context.Context, dir string) error {
	_, err := s.gpg(ctx, "--yes", "--clearsign", "-o", filepath.Join(dir, "InRelease"), filepath.Join(dir, "Release"))
	return err
}

// RepomdSignature is a dnf repository's detached, armored signature of
// its repomd.xml, which dnf checks with repo_gpgcheck.
const RepomdSignature = "repodata/repomd.xml.asc"

// SignRepomd writes the dnf repository in dir's RepomdSignature: with
// repo_gpgcheck=1 and the bundle's key as gpgkey, dnf reads no metadata
// the signature does not cover, and the metadata holds every package's
// sha256.
func (s *Signer) SignRepomd(ctx context.Context, dir string) error {
	_, err := s.gpg(ctx, "--yes", "--armor", "--detach-sign", "-o", filepath.Join(dir, filepath.FromSlash(RepomdSignature)), filepath.Join(dir, "repodata", "repomd.xml"))
	return err
}

// Close stops the gpg-agent gpg started for the key and removes the key.
func (s *Signer) Close() {
	if _, err := exec.LookPath("gpgconf"); err == nil {
		_ = exec.Command("gpgconf", "--homedir", s.home, "--kill", "gpg-agent").Run() // best effort: the home goes next
	}
	os.RemoveAll(s.home)
}

func (s *Signer) gpg(ctx context.Context, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "gpg", append([]string{"--batch", "--quiet", "--homedir", s.home, "--passphrase", "", "--pinentry-mode", "loopback"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("gpg %s: %v: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}
