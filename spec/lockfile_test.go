package spec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLockFileRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, LockFileName)
	src := `node "train" {
  driver = "580.95.05"
  cuda   = "12.8.1"
}
node "infer" {
  nccl = "2.25.1"
}
`
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	l, _, diags := LoadLockFile(path)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	if v, ok := l.Pinned("train", "driver"); !ok || v.Raw != "580.95.05" {
		t.Errorf("driver pin = %v %v", v, ok)
	}
	if _, ok := l.Pinned("infer", "driver"); ok {
		t.Error("infer has no driver pin")
	}
	out := string(FormatLock(l))
	if !strings.Contains(out, "node \"infer\" {\n  nccl = \"2.25.1\"\n}") || strings.Index(out, "infer") > strings.Index(out, "train") {
		t.Errorf("formatted lock file:\n%s", out)
	}
	// Formatting is stable: loading and formatting again changes nothing.
	os.WriteFile(path, []byte(out), 0o644)
	l2, _, _ := LoadLockFile(path)
	if string(FormatLock(l2)) != out {
		t.Error("FormatLock is not stable")
	}

	if l, _, d := LoadLockFile(filepath.Join(dir, "missing")); l != nil || d != nil {
		t.Error("a missing lock file is not an error")
	}
	os.WriteFile(path, []byte("node \"a\" {\n  driver = \"580\"\n  cudaa = \"12.8.1\"\n}\n"), 0o644)
	_, _, diags = LoadLockFile(path)
	if len(diags) != 2 || !strings.Contains(diags[0].Detail+diags[1].Detail, "is a branch, not an exact release") || !strings.Contains(diags[0].Detail+diags[1].Detail, `Did you mean "cuda"?`) {
		t.Errorf("bad lock file: %v", diags)
	}
}
