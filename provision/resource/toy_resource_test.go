package resource

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/local"
)

// This file is the walk-through of ARCHITECTURE.md "How to add … A
// resource", done: a resource type in one file. It declares what it reads
// back (toyReads), builds its resource from the spec and the facts
// (buildToy) and is registered the way every type is, as a builder, here
// beside builders() instead of in it. TestToyResource plans it against a
// root prefix: the probe reads its declared file, Diff compares, its step
// writes the file, and the next plan has nothing to do.

// toyName is the toy resource type's name.
const toyName = "toy_motd"

// toyFile is the file it writes in full. Its name carries "gpuform" and
// it lives in a managed directory, as every file gpuform writes does.
const toyFile = "/etc/gpuform/toy-motd"

// toyReads declares what toy_motd reads back on a node: the file it
// writes, and the pending marker of an interrupted write.
func toyReads() facts.Reads {
	return facts.Reads{ManagedFiles: []string{toyFile}, ManagedDirs: []string{pendingDir}}
}

// buildToy writes toyFile with a greeting naming the node.
func buildToy(in *buildInput) ([]Resource, []string, error) {
	content := header(in.n) + "Welcome to " + in.n.Name + ", a node gpuform manages.\n"
	return []Resource{&fileResource{
		base:    base{name: toyName},
		path:    toyFile,
		content: content,
		current: managedFile(toyFile),
		attrs: func(_ *facts.Node, cur string, exists bool) Values {
			if !exists {
				return Values{}
			}
			return Values{"content": StringVal("sha256:" + shortSum(cur))}
		},
		desired: Values{"content": StringVal("sha256:" + shortSum(content))},
	}}, nil, nil
}

// toyBuilders are the shipped resource types and the toy.
func toyBuilders() []builder {
	return append(builders(), builder{toyName, buildToy, toyReads})
}

func TestToyResource(t *testing.T) {
	bs := toyBuilders()
	reads := readsOf(bs)
	root := t.TempDir()
	probe := func() *facts.Node {
		t.Helper()
		f, err := facts.Probe(context.Background(), local.New("root"), facts.Options{Reads: reads, Root: root})
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	plan := func(f *facts.Node) Change {
		t.Helper()
		rs, _, err := buildWith(bs, testKB, loadNode(t, ""), f)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			if r.Name() == toyName {
				c, err := r.Diff(f)
				if err != nil {
					t.Fatal(err)
				}
				return c
			}
		}
		t.Fatalf("no %s resource planned", toyName)
		return Change{}
	}
	if _, ok := probe().ConfigFile(toyFile); !ok {
		t.Fatalf("the probe did not read the declared %s byte-exact", toyFile)
	}
	if slices.Contains(Reads().ManagedFiles, toyFile) {
		t.Fatalf("the shipped declarations name the toy's file: the probe must read it because the toy declares it")
	}

	// First plan: the file is absent, so the resource is created.
	c := plan(probe())
	if c.Action != Create || len(c.Steps) == 0 {
		t.Fatalf("first plan: %s with %d steps, want create with steps", c.Action, len(c.Steps))
	}
	for _, st := range c.Steps {
		if err := runStep(t, root, st); err != nil {
			t.Fatalf("step %q: %v", st.Description, err)
		}
	}
	want := managedHeader + "Welcome to n, a node gpuform manages.\n"
	got, err := os.ReadFile(filepath.Join(root, toyFile))
	if err != nil || string(got) != want {
		t.Fatalf("after apply %s = %q, %v; want %q", toyFile, got, err, want)
	}

	// The probe reads what the step wrote back into ManagedFiles.
	f := probe()
	if cur, ok := f.ManagedFile(toyFile); !ok || cur != want {
		t.Fatalf("the probe read back %q, %v; want %q", cur, ok, want)
	}
	// Without the toy's declaration the probe does not read its file
	// byte-exact: the declaration is what drives it.
	shipped, err := facts.Probe(context.Background(), local.New("root"), facts.Options{Reads: Reads(), Root: root})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := shipped.ConfigFile(toyFile); ok {
		t.Errorf("the probe read %s byte-exact without the toy's declaration", toyFile)
	}
	// Second plan: converged.
	if c := plan(f); c.Action != NoOp {
		t.Fatalf("second plan: %s (before %v, after %v), want no-op", c.Action, c.Before, c.After)
	}
}

// TestToyWalkthroughDocumented keeps ARCHITECTURE.md's walk-through in step
// with this file: every line of its Go excerpt (but the elided one) is a
// line here.
func TestToyWalkthroughDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("toy_resource_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(doc), "**Walk-through: a toy resource in one file.**")
	if !ok {
		t.Fatal("ARCHITECTURE.md has no toy resource walk-through")
	}
	_, after, ok = strings.Cut(after, "```go\n")
	excerpt, _, ok2 := strings.Cut(after, "```")
	if !ok || !ok2 {
		t.Fatal("the walk-through has no Go excerpt")
	}
	lines := map[string]bool{}
	for _, l := range strings.Split(string(src), "\n") {
		lines[strings.TrimSpace(l)] = true
	}
	checked := 0
	for _, l := range strings.Split(excerpt, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.Contains(l, "/*") {
			continue
		}
		checked++
		if !lines[l] {
			t.Errorf("ARCHITECTURE.md's walk-through line %q is not in toy_resource_test.go", l)
		}
	}
	if checked < 5 {
		t.Errorf("the walk-through excerpt has %d lines to check", checked)
	}
}
