package main

import (
	"strings"
	"testing"
	"time"

	"github.com/gpuform/gpuform/internal/registrytest"
)

// The regression tests of issue 31 that go through the command line: each
// reproduces one thing an adversarial run found broken.

// TestLockHostileRegistryConfigSize: gpuform lock and lock -check against
// a registry that declares a 20 GB config blob fail at once, naming the
// registry and the limit, instead of reading it into memory.
func TestLockHostileRegistryConfigSize(t *testing.T) {
	reg := registrytest.StartHostile(t, registrytest.Hostile{Manifest: registrytest.ImageManifest(20 << 30), BlobEndless: true})
	dir := t.TempDir()
	imageSpec(t, dir, reg.Host+"/nvidia/cuda:12.8")
	env := []string{"GPUFORM_SIM_STATE=" + t.TempDir()}
	for _, args := range [][]string{{"lock", dir}, {"lock", "-check", dir}} {
		start := time.Now()
		code, out, errOut := runCLIEnv(t, env, args...)
		if code == ExitOK || !strings.Contains(oneLine(errOut), "registry "+reg.Host+" declares a config blob of 20 GiB, over gpuform's limit of 16 MiB") {
			t.Errorf("%s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("%s took %s", strings.Join(args, " "), took)
		}
	}
	if served := reg.Served(); served > 32<<20 {
		t.Errorf("the registry served %d bytes", served)
	}
}

// oneLine is text with its line wrapping undone, for phrases a diagnostic
// may wrap.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
