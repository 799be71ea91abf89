package docs

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/gpuform/gpuform/"

// layerRule is one edge the import graph must not have (ARCHITECTURE.md:
// imports go one way). A rule on Deps is transitive: it holds for every
// package the importer builds with, not only those it names.
type layerRule struct {
	// pkg is the package the rule is about, relative to the module;
	// a trailing "/..." includes the packages below it.
	pkg string
	// allowed, when set, are the only packages of the module pkg may
	// import directly.
	allowed []string
	// forbidden are module package prefixes pkg may not import directly,
	// nor through another package when transitive.
	forbidden  []string
	transitive bool
	why        string
}

var layerRules = []layerRule{
	{pkg: "kb", allowed: []string{"spec", "internal/lazyre"},
		why: "lint and provision both read the knowledge base, so it sits below both and takes only spec's vocabulary (and internal/lazyre, a leaf that imports nothing of gpuform)"},
	{pkg: "diagview", allowed: []string{"internal/jsonformat", "internal/palette"},
		why: "validate and fmt render spec diagnostics through it without lint; lint imports diagview, never the reverse"},
	{pkg: "lint/...", forbidden: []string{"provision", "cmd"},
		why: "provision imports lint, so lint may not depend on provision or the CLI"},
	{pkg: "provision/plan", forbidden: []string{"provision/apply", "provision/verify", "cmd"}, transitive: true,
		why: "plan.Run makes the whole plan, Slurm preview included, and apply reads it; plan must not depend on how it is carried out"},
}

// listedPackage is what go list -json says of a package.
type listedPackage struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

// TestImportLayers keeps the import graph's layers in one table: each rule
// names a package and what it may not (or may only) import, and every
// rule's package must exist, so a moved package cannot pass unchecked.
func TestImportLayers(t *testing.T) {
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports,Deps", "./...")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	var pkgs []listedPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	for _, r := range layerRules {
		matched := 0
		for _, p := range pkgs {
			rel, ok := strings.CutPrefix(p.ImportPath, module)
			if !ok || !inPackage(rel, r.pkg) {
				continue
			}
			matched++
			imports := p.Imports
			if r.transitive {
				imports = p.Deps
			}
			for _, imp := range imports {
				dep, ok := strings.CutPrefix(imp, module)
				if !ok {
					continue
				}
				if r.allowed != nil && !slices.Contains(r.allowed, dep) {
					t.Errorf("%s imports %s: it may import only %s of gpuform (%s)", rel, dep, strings.Join(r.allowed, ", "), r.why)
				}
				for _, f := range r.forbidden {
					if dep == f || strings.HasPrefix(dep, f+"/") {
						t.Errorf("%s depends on %s (%s)", rel, dep, r.why)
					}
				}
			}
		}
		if matched == 0 {
			t.Errorf("rule for %s matches no package: update the rule with the package", r.pkg)
		}
	}
}

// inPackage is whether package rel is pattern ("lint" or "lint/...").
func inPackage(rel, pattern string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return rel == base || strings.HasPrefix(rel, base+"/")
	}
	return rel == pattern
}
