package main

import (
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/provision/sim"
)

// TestGraphQuickstart draws the quickstart's simulated node through the
// real probe, as a user meets it: text with GPU 3's idle Gen1 link drawn
// but not marked (an idle GPU lowers its generation to save power; verify
// passes it too), DOT, -offline from the hardware value, and the SVG
// picture written to a file.
func TestGraphQuickstart(t *testing.T) {
	t.Parallel()
	env := []string{"GPUFORM_SIM_STATE=" + t.TempDir()}
	code, out, errOut := runCLIEnv(t, env, "graph", "../../examples/quickstart")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"node quickstart: sim://hgx-h100-stale",
		"GPU3 · H100 SXM5 80GB · 0000:61:00.0 · Gen1 x16 (max Gen5 x16)\n",
		"GPU–NIC (affinity):",
		"No problems seen.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}

	code, out, errOut = runCLIEnv(t, env, "graph", "-offline", "-format", "dot", "../../examples/quickstart")
	if code != ExitOK || !strings.HasPrefix(out, "digraph gpuform {") || !strings.Contains(out, "(from spec)") || strings.Contains(out, "Problems") {
		t.Errorf("-offline -format dot: exit %d %s\n%s", code, errOut, out)
	}

	svg := filepath.Join(t.TempDir(), "node.svg")
	code, out, errOut = runCLIEnv(t, env, "graph", "-format", "svg", "-out", svg, "../../examples/quickstart")
	if code != ExitOK || out != "" {
		t.Fatalf("-format svg: exit %d %s\n%s", code, errOut, out)
	}
	b, err := os.ReadFile(svg)
	// The picture wraps GPU 3's link over two lines of its box.
	if err != nil || !strings.Contains(string(b), "<svg") || !strings.Contains(string(b), ">GPU3</text>") || !strings.Contains(string(b), ">PCIe Gen1 x16</text>") || !strings.Contains(string(b), ">(max Gen5 x16)</text>") {
		t.Errorf("SVG file: %v\n%.300s", err, b)
	}
}

// TestGraphPictureWithoutDot: -format svg and png are gpuform's own
// drawing, so they need no Graphviz on PATH (-offline, so nothing else
// needs PATH); png writes a PNG.
func TestGraphPictureWithoutDot(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	code, out, errOut := runCLIEnv(t, nil, "graph", "-offline", "-format", "svg", "../../examples/quickstart")
	if code != ExitOK || !strings.HasPrefix(out, "<?xml") || !strings.Contains(out, "<svg") {
		t.Errorf("-format svg: exit %d: %s\n%.200s", code, errOut, out)
	}
	pngPath := filepath.Join(t.TempDir(), "node.png")
	code, out, errOut = runCLIEnv(t, nil, "graph", "-offline", "-format", "png", "-out", pngPath, "../../examples/quickstart")
	if code != ExitOK || out != "" {
		t.Fatalf("-format png: exit %d: %s\n%s", code, errOut, out)
	}
	f, err := os.Open(pngPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := png.DecodeConfig(f); err != nil {
		t.Errorf("-format png wrote no PNG: %v", err)
	}
}

// TestGraphRootAndFlags: --root draws an unpacked root with no spec (the
// Ethernet port at x8 of x16 marked); a bad -format is refused.
func TestGraphRootAndFlags(t *testing.T) {
	root, err := sim.Materialize("gh200", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLIEnv(t, nil, "graph", "--root", root)
	if code != ExitOK || !strings.Contains(out, "mlx5_1 · enP2p1s0f0np0") || !strings.Contains(out, "Gen5 x8 (max Gen5 x16)  [!]") {
		t.Errorf("--root: exit %d %s\n%s", code, errOut, out)
	}
	code, _, errOut = runCLIEnv(t, nil, "graph", "-format", "jpeg", "--root", root)
	if code != ExitFailed || !strings.Contains(errOut, "-format must be text, dot, svg or png") {
		t.Errorf("-format jpeg: exit %d %s", code, errOut)
	}
}
