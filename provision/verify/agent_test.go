package verify

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/provision/local"
	"github.com/gpuform/gpuform/provision/transport"
)

// countingTransport counts the commands that streamed stdin (uploads) and
// can corrupt the uploaded bytes to prove the checksum is verified.
type countingTransport struct {
	transport.Transport
	uploads int
	corrupt bool
}

func (c *countingTransport) Run(ctx context.Context, cmd transport.Command) (transport.Result, error) {
	if cmd.Stdin != nil {
		c.uploads++
		if c.corrupt {
			data, _ := io.ReadAll(cmd.Stdin)
			data[0] ^= 0xff
			cmd.Stdin = bytes.NewReader(data)
		}
	}
	return c.Transport.Run(ctx, cmd)
}

// TestEnsureAgentLocal runs the upload scripts in a real /bin/sh.
func TestEnsureAgentLocal(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "gpuform")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho agent v1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	tr := &countingTransport{Transport: local.New("localhost", local.WithEnv(map[string]string{"HOME": home}))}
	ctx := context.Background()
	sum := sha256.Sum256([]byte("#!/bin/sh\necho agent v1\n"))
	wantPath := filepath.Join(home, AgentCacheDir, "agent-"+hex.EncodeToString(sum[:]))

	path, uploaded, err := EnsureAgent(ctx, tr, bin)
	if err != nil || !uploaded || path != wantPath {
		t.Fatalf("first: %q %v %v", path, uploaded, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("uploaded file: %v %v", fi, err)
	}
	if _, uploaded, err := EnsureAgent(ctx, tr, bin); err != nil || uploaded || tr.uploads != 1 {
		t.Fatalf("second run uploaded again: %v %v (%d uploads)", uploaded, err, tr.uploads)
	}
	// A remote copy that was tampered with is replaced.
	if err := os.WriteFile(path, []byte("tampered"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, uploaded, err := EnsureAgent(ctx, tr, bin); err != nil || !uploaded {
		t.Fatalf("tampered copy kept: %v %v", uploaded, err)
	}
	// Bytes damaged on the way are caught by the checksum after upload.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	tr.corrupt = true
	if _, _, err := EnsureAgent(ctx, tr, bin); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Fatalf("corrupted upload accepted: %v", err)
	}
	left, _ := filepath.Glob(filepath.Join(home, AgentCacheDir, ".agent-*"))
	if len(left) != 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
	if _, _, err := EnsureAgent(ctx, tr, filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("missing local binary accepted")
	}
}

// TestFetchNVMLFallback: without an agent, nvidia-smi is used and the
// report says so; without nvidia-smi either, both reasons are reported.
func TestFetchNVMLFallback(t *testing.T) {
	xml, err := filepath.Abs("smi/testdata/nvidia-smi-q-x-TeslaT4-driver515-v11.xml")
	if err != nil {
		t.Fatal(err)
	}
	stand := t.TempDir()
	if err := os.WriteFile(filepath.Join(stand, "nvidia-smi"), []byte("#!/bin/sh\ncat "+xml+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tr := local.New("localhost", local.WithEnv(map[string]string{"PATH": stand + ":/usr/bin:/bin"}))
	rep, err := FetchNVML(ctx, tr, FetchOptions{})
	if err != nil || rep.Source != "nvidia-smi" || len(rep.GPUs) != 1 || !strings.Contains(strings.Join(rep.Warnings, ""), "no agent binary") {
		t.Fatalf("fallback: %+v %v", rep, err)
	}
	// An agent that cannot execute (another architecture) falls back too.
	bad := filepath.Join(t.TempDir(), "gpuform")
	if err := os.WriteFile(bad, []byte("\x7fELF not really"), 0o755); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	tr = local.New("localhost", local.WithEnv(map[string]string{"PATH": stand + ":/usr/bin:/bin", "HOME": home}))
	rep, err = FetchNVML(ctx, tr, FetchOptions{LocalBinary: bad})
	if err != nil || rep.Source != "nvidia-smi" || !strings.Contains(strings.Join(rep.Warnings, ""), "agent exited") {
		t.Fatalf("bad agent: %+v %v", rep, err)
	}
	tr = local.New("localhost", local.WithEnv(map[string]string{"PATH": t.TempDir() + ":/usr/bin:/bin", "HOME": home}))
	if _, err := FetchNVML(ctx, tr, FetchOptions{LocalBinary: bad}); err == nil || !strings.Contains(err.Error(), "nvidia-smi fallback") {
		t.Fatalf("no path at all: %v", err)
	}
}
