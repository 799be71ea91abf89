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

// testOnlyPackages are packages made for tests: the gpuform binary links
// none of them (issue 35: every package linked is initialised, and its
// code and tables paged in, by every command). A package of the module
// listed here is one of its test helpers; the others are the standard
// library's and third parties' testing packages.
var testOnlyPackages = []string{
	module + "internal/sshtest", module + "internal/kubetest", module + "internal/slurmtest",
	module + "internal/registrytest", module + "internal/procmeter", module + "internal/debroot",
	module + "internal/promtool",
	"testing", "testing/fstest", "testing/iotest", "testing/quick", "net/http/httptest",
	"github.com/google/go-cmp/cmp", "github.com/stretchr/testify",
}

// knownTestImporters are the third-party packages of the binary that
// import a testing package themselves, and which: it is theirs to drop.
// hclwrite (spec's formatter and writer) compares nodes with go-cmp, and
// prometheus/common's expfmt pulls go-abnf, whose fuzz helpers are not
// in _test files.
var knownTestImporters = map[string]string{
	"github.com/hashicorp/hcl/v2/hclwrite": "github.com/google/go-cmp/cmp",
	"github.com/pandatix/go-abnf":          "testing",
}

// TestBinaryDeps holds what the gpuform binary links: no package of
// gpuform imports a test-only package, none of gpuform's test helpers is
// linked, and a third-party package that imports one is a known one.
func TestBinaryDeps(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "-json=ImportPath,Imports", "./cmd/gpuform")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	testOnly := func(p string) bool {
		for _, q := range testOnlyPackages {
			if p == q || strings.HasPrefix(p, q+"/") {
				return true
			}
		}
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	linked := 0
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		linked++
		ours := strings.HasPrefix(p.ImportPath, module)
		if ours && testOnly(p.ImportPath) {
			t.Errorf("the binary links %s, a test helper", p.ImportPath)
		}
		for _, imp := range p.Imports {
			if !testOnly(imp) || testOnly(p.ImportPath) {
				continue
			}
			switch {
			case ours:
				t.Errorf("%s imports %s outside its tests: the binary then links it", p.ImportPath, imp)
			case knownTestImporters[p.ImportPath] != imp:
				t.Errorf("the binary links %s through %s: a new dependency's test package (add it to knownTestImporters only if it cannot be avoided)", imp, p.ImportPath)
			}
		}
	}
	if linked < 100 {
		t.Fatalf("go list named %d packages for ./cmd/gpuform", linked)
	}
}
