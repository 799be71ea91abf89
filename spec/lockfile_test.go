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

// TestApplyLockStale checks what plan, apply and verify say about a lock
// file that no longer matches the spec: a pin outside the spec's branch is
// an error, a pin other than the spec's exact version a warning (the spec
// wins), and a matching pin nothing.
func TestApplyLockStale(t *testing.T) {
	cases := []struct {
		name, spec, lock string
		want             string // "", "error" or "warning"
		wantDriver       string
	}{
		{"exact, pinned the same", "580.95.05", "580.95.05", "", "580.95.05"},
		{"exact, pinned another", "580.95.05", "570.86.15", "warning", "580.95.05"},
		{"branch, pinned inside", "580", "580.95.05", "", "580.95.05"},
		{"branch, pinned outside", "580", "570.86.15", "error", "580"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := "node \"n\" {\n  hosts = [\"h\"]\n  driver {\n    version = \"" + c.spec + "\"\n  }\n}\n"
			cfg, diags := LoadFiles(map[string][]byte{"main.gpuform.hcl": []byte(src)}, LoadOptions{})
			if diags.HasErrors() {
				t.Fatal(diags.Error())
			}
			path := filepath.Join(t.TempDir(), LockFileName)
			if err := os.WriteFile(path, []byte("node \"n\" {\n  driver = \""+c.lock+"\"\n}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			lock, _, d := LoadLockFile(path)
			if d.HasErrors() {
				t.Fatal(d.Error())
			}
			diags = ApplyLock(cfg, lock)
			got := ""
			if len(diags) == 1 {
				got = map[bool]string{true: "error", false: "warning"}[diags.HasErrors()]
				if diags[0].Subject == nil || diags[0].Subject.Start.Line != 4 {
					t.Errorf("diagnostic does not point at the version: %v", diags[0].Subject)
				}
			} else if len(diags) > 1 {
				got = diags.Error()
			}
			if got != c.want {
				t.Errorf("diagnostics %q, want %q (%v)", got, c.want, diags)
			}
			if v := cfg.Nodes[0].Driver.Version.V.Raw; v != c.wantDriver {
				t.Errorf("driver = %s, want %s", v, c.wantDriver)
			}
		})
	}
}

// FuzzParseLockFile feeds arbitrary text to the lock-file parser, which
// reads a file that a pull request can change: it must return diagnostics,
// never panic, and a lock it accepts must survive a format round trip.
func FuzzParseLockFile(f *testing.F) {
	f.Add([]byte("node \"train\" {\n  driver = \"580.95.05\"\n  cuda   = \"12.8.1\"\n}\n"))
	f.Add([]byte("node \"a\" {\n  driver = \"550\"\n}\nnode \"a\" {\n  nccl = \"2.25.1-1+cuda12.8\"\n}\n"))
	f.Add([]byte("node \"x\" { driver = \"${1}\" }"))
	f.Fuzz(func(t *testing.T, src []byte) {
		lock, _, diags := ParseLockFile(src, LockFileName)
		if diags.HasErrors() || lock == nil {
			return
		}
		again, _, d := ParseLockFile(FormatLock(lock), LockFileName)
		if d.HasErrors() || again == nil {
			t.Fatalf("formatted lock does not parse again: %v\n%s", d, FormatLock(lock))
		}
	})
}
