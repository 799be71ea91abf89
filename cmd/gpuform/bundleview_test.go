package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/internal/jsonformat"
	"github.com/gpuform/gpuform/provision/bundle"
)

// TestBundleJSONGolden: bundle -format json and bundle -check -format
// json of a fixed bundle are the documents in testdata/bundle, compared
// as parsed JSON, with format_version the one every document carries;
// an open repository makes the check's document closed: false.
func TestBundleJSONGolden(t *testing.T) {
	t.Parallel()
	deb := bundle.Repo{Node: "gpu", Family: "debian", OS: "ubuntu 22.04", Arch: "x86_64", Dir: "repos/gpu-ubuntu-22.04-x86_64",
		Wanted: []string{"libnccl-dev=2.21.5-1+cuda12.4", "libnccl2=2.21.5-1+cuda12.4"},
		Packages: []bundle.Package{
			{Name: "libnccl-dev", Version: "2.21.5-1+cuda12.4", File: "repos/gpu-ubuntu-22.04-x86_64/libnccl-dev_2.21.5-1+cuda12.4_amd64.deb"},
			{Name: "libnccl2", Version: "2.21.5-1+cuda12.4", File: "repos/gpu-ubuntu-22.04-x86_64/libnccl2_2.21.5-1+cuda12.4_amd64.deb"},
		}}
	rpm := bundle.Repo{Node: "gpu", Family: "rhel", OS: "rocky 9.4", Arch: "x86_64", Dir: "repos/gpu-rocky-9.4-x86_64",
		Wanted:   []string{"libnccl-devel=2.21.5-1+cuda12.4"},
		Packages: []bundle.Package{{Name: "libnccl-devel", Version: "2.21.5-1+cuda12.4", File: "repos/gpu-rocky-9.4-x86_64/libnccl-devel-2.21.5-1+cuda12.4.x86_64.rpm"}}}
	sum := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	m := &bundle.Manifest{Lock: sum, Repos: []bundle.Repo{rpm, deb},
		Images: []bundle.Image{{Node: "gpu", Ref: "nvcr.io/nvidia/pytorch:25.02-py3", Platform: "linux/amd64", Name: "nvcr.io/nvidia/pytorch@sha256:" + sum}},
		Files: []bundle.File{
			{Path: "images/index.json", SHA256: sum, Size: 300},
			{Path: "keys/bundle.gpg", SHA256: sum, Size: 100},
			{Path: deb.Packages[0].File, SHA256: sum, Size: 2000},
			{Path: deb.Packages[1].File, SHA256: sum, Size: 3000},
			{Path: "repos/gpu-ubuntu-22.04-x86_64/InRelease", SHA256: sum, Size: 40},
			{Path: rpm.Packages[0].File, SHA256: sum, Size: 5000},
		}}
	var b bytes.Buffer
	if err := writeBundleJSON(&b, "offline.tar.gz", m); err != nil {
		t.Fatal(err)
	}
	compareJSONGolden(t, "testdata/bundle/bundle.json.golden", b.Bytes())

	results := []*bundle.CheckResult{
		{Repo: &m.Repos[1], Installs: 2},
		{Repo: &m.Repos[0], Problems: []string{"nothing provides libnccl = 2.21.5-1+cuda12.4 needed by libnccl-devel-2.21.5-1+cuda12.4.x86_64"}},
	}
	b.Reset()
	closed, err := writeBundleCheckJSON(&b, "offline.tar.gz", results)
	if err != nil {
		t.Fatal(err)
	}
	if closed {
		t.Errorf("a bundle with an open repository reads closed")
	}
	compareJSONGolden(t, "testdata/bundle/check.json.golden", b.Bytes())
}

// compareJSONGolden compares a JSON document with the golden file's, as
// parsed values, after checking its format_version is jsonformat's.
func compareJSONGolden(t *testing.T, golden string, got []byte) {
	t.Helper()
	var g, w map[string]any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("the document is not JSON: %v\n%s", err, got)
	}
	if g["format_version"] != jsonformat.Version {
		t.Errorf("format_version %v, want %s", g["format_version"], jsonformat.Version)
	}
	want, err := os.ReadFile(filepath.FromSlash(golden))
	if err != nil {
		t.Fatalf("%v\n(the document is:\n%s)", err, got)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("%s: %v", golden, err)
	}
	// The golden's format_version is whatever it was written with: only
	// the fields are compared.
	delete(g, "format_version")
	delete(w, "format_version")
	if d := cmp.Diff(w, g); d != "" {
		t.Errorf("%s (-golden +got):\n%s", golden, d)
	}
}

// TestBundleCheckBadInput: bundle -check of what is not a closed bundle
// fails, naming what is wrong and the flag it came from: a missing
// tarball is -check's (not -bundle's), and a bundle with no package
// repository has nothing to prove closed, so it is not reported closed.
func TestBundleCheckBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := bundle.WriteManifest(empty, &bundle.Manifest{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ args, want []string }{
		{[]string{"bundle", "-check", filepath.Join(dir, "none.tar")}, []string{"-check " + filepath.Join(dir, "none.tar") + ": ", "no such file"}},
		{[]string{"bundle", "-check", empty}, []string{"holds no package repository"}},
		{[]string{"bundle", "-check", empty, "-format", "json"}, []string{"holds no package repository"}},
	} {
		code, stdout, errOut := runCLI(t, "", tc.args...)
		for _, w := range tc.want {
			if code != ExitFailed || !bytes.Contains([]byte(stdout+errOut), []byte(w)) {
				t.Errorf("%v: exit %d, want %d naming %q\n%s\n%s", tc.args, code, ExitFailed, w, stdout, errOut)
			}
		}
		if bytes.Contains([]byte(stdout+errOut), []byte("-bundle")) || bytes.Contains([]byte(stdout), []byte("is closed")) {
			t.Errorf("%v: names -bundle or says closed:\n%s\n%s", tc.args, stdout, errOut)
		}
	}
}
