package facts_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/local"
	"github.com/gpuform/gpuform/provision/resource"
)

// The probe copies files with the shell's read instead of cat; a last line
// without its newline, and blank lines, must come through as they are.
func TestProbeCopiesFilesExactly(t *testing.T) {
	root := t.TempDir()
	write := func(p, content string) {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("etc/os-release", "NAME=\"Test\"\n\nID=testos\nPRETTY_NAME=\"Test OS 1\"")
	write("etc/docker/daemon.json", "{\n  \"default-shm-size\": \"16G\"\n}")
	n, err := facts.Probe(context.Background(), local.New("localhost"), facts.Options{Reads: resource.Reads(), Root: root})
	if err != nil {
		t.Fatal(err)
	}
	if n.OS.ID != "testos" || n.OS.Pretty != "Test OS 1" {
		t.Errorf("os-release read as %+v", n.OS)
	}
	if n.Docker.Raw != "{\n  \"default-shm-size\": \"16G\"\n}" || n.Docker.ShmSize() != "16G" {
		t.Errorf("daemon.json read as %q", n.Docker.Raw)
	}
}
