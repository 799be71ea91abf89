package lint

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/gpuform/gpuform/modules"
	"github.com/gpuform/gpuform/spec"
)

// hostileValues replace, one at a time, the value of every attribute of
// every example: the wrong types, shapes and sizes an operator's typo or a
// bad variable produces. Each replaced spec must load and lint without a
// panic or an "Internal error", and every error the loader reports must
// point into the spec.
var hostileValues = []string{
	`null`,
	`"x"`,
	`-1`,
	`1e400`,
	`[]`,
	`{}`,
	`[null]`,
	`{ a = null }`,
	`tomap({ a = "b" })`,
	`[{ index = 0 }, { index = "x", extra = [1] }]`,
	`"ünïcødé\u0000"`,
	`nope.missing`,
}

// TestExamplesMutated is a deterministic, table-shaped cousin of FuzzLint
// over the shipped examples (see hostileValues).
func TestExamplesMutated(t *testing.T) {
	t.Parallel()
	dirs, err := filepath.Glob("../examples/*")
	if err != nil {
		t.Fatal(err)
	}
	runs := 0
	for _, dir := range dirs {
		names, _ := filepath.Glob(filepath.Join(dir, "*.gpuform.hcl"))
		if len(names) == 0 {
			continue
		}
		files := map[string][]byte{}
		for _, n := range names {
			src, err := os.ReadFile(n)
			if err != nil {
				t.Fatal(err)
			}
			files[filepath.Base(n)] = src
		}
		for _, name := range sortedNames(files) {
			src := files[name]
			f, diags := hclsyntax.ParseConfig(src, name, hcl.InitialPos)
			if diags.HasErrors() {
				t.Fatalf("%s/%s: %s", dir, name, diags.Error())
			}
			for _, rng := range attributeValueRanges(f.Body.(*hclsyntax.Body)) {
				for _, val := range hostileValues {
					mutated := string(src[:rng.Start.Byte]) + val + string(src[rng.End.Byte:])
					label := fmt.Sprintf("%s/%s:%d replaced by %s", filepath.Base(dir), name, rng.Start.Line, val)
					in := map[string][]byte{}
					for k, v := range files {
						in[k] = v
					}
					in[name] = []byte(mutated)
					lintOnce(t, label, in)
					runs++
				}
			}
		}
	}
	if runs < 500 {
		t.Errorf("only %d mutated specs; the examples should give many more", runs)
	}
}

func lintOnce(t *testing.T, label string, files map[string][]byte) {
	t.Helper()
	lintWith(t, label, files, modules.FS())
}

func lintWith(t *testing.T, label string, files map[string][]byte, builtin fs.FS) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s: panic: %v", label, r)
		}
	}()
	cfg, diags := spec.LoadFiles(files, spec.LoadOptions{BuiltinModules: builtin})
	for _, d := range diags {
		if d.Severity == hcl.DiagError && (d.Subject == nil || d.Subject.Filename == "") {
			t.Errorf("%s: error without a place: %s: %s", label, d.Summary, d.Detail)
		}
	}
	_, ldiags := Run(cfg, Options{KB: testKB, Now: testNow})
	for _, d := range ldiags {
		if strings.HasPrefix(d.Summary, "Internal error") {
			t.Errorf("%s: %s: %s", label, d.Summary, d.Detail)
		}
	}
}

// attributeValueRanges lists the value range of every attribute in body
// and its nested blocks, and of the values inside literal objects and the
// first two elements of literal lists (a hardware object's gpu_count, one
// GPU's numa), so shapes inside module outputs are attacked too.
func attributeValueRanges(body *hclsyntax.Body) []hcl.Range {
	var out []hcl.Range
	for _, a := range body.Attributes {
		out = append(out, exprRanges(a.Expr)...)
	}
	for _, b := range body.Blocks {
		out = append(out, attributeValueRanges(b.Body)...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Start.Byte < out[j].Start.Byte })
	return out
}

func sortedNames(m map[string][]byte) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func exprRanges(e hclsyntax.Expression) []hcl.Range {
	out := []hcl.Range{e.Range()}
	switch x := e.(type) {
	case *hclsyntax.ObjectConsExpr:
		for _, it := range x.Items {
			out = append(out, exprRanges(it.ValueExpr)...)
		}
	case *hclsyntax.TupleConsExpr:
		for i, el := range x.Exprs {
			if i == 2 {
				break
			}
			out = append(out, exprRanges(el)...)
		}
	}
	return out
}

// modulesUser instantiates every built-in module and uses its outputs the
// way the examples do.
const modulesUser = `
module "stack" {
  source = "gpuform/stack-cuda12-8"
}
%[1]s
`

const moduleNode = `
module "%[1]s" {
  source = "gpuform/%[2]s"
}
node "%[1]s" {
  hosts    = ["%[1]s-host"]
  hardware = module.%[1]s.hardware
  driver {
    version       = module.stack.driver_version
    kernel_module = module.stack.kernel_module
  }
  cuda {
    version = module.stack.cuda_version
  }
  numa {
    dynamic "bind" {
      for_each = module.%[1]s.numa_binds
      content {
        gpus = bind.value.gpus
        node = bind.value.node
      }
    }
  }
  affinity {
    gpu_nic = try(module.%[1]s.gpu_nic, {})
  }
}
`

// TestModulesMutated replaces, one at a time, every value in every
// built-in module (hardware objects included, down to one GPU's fields) by
// each of hostileValues, and loads and lints a spec that uses the module.
func TestModulesMutated(t *testing.T) {
	t.Parallel()
	base := modules.FS()
	var paths []string
	if err := fs.WalkDir(base, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".gpuform.hcl") {
			paths = append(paths, p)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	orig := fstest.MapFS{}
	for _, p := range paths {
		b, err := fs.ReadFile(base, p)
		if err != nil {
			t.Fatal(err)
		}
		orig[p] = &fstest.MapFile{Data: b}
	}
	// rootFor is the spec that uses a module: a node on it for a hardware
	// profile, a node on hgx-h100-8gpu for the stack module.
	rootFor := func(mod string) map[string][]byte {
		if mod == "stack-cuda12-8" {
			mod = "hgx-h100-8gpu"
		}
		node := fmt.Sprintf(moduleNode, strings.ReplaceAll(mod, "-", "_"), mod)
		return map[string][]byte{"main.gpuform.hcl": []byte(fmt.Sprintf(modulesUser, node))}
	}
	runs := 0
	for _, p := range paths {
		root := rootFor(path.Dir(p))
		if cfg, diags := spec.LoadFiles(root, spec.LoadOptions{BuiltinModules: orig}); diags.HasErrors() || len(cfg.Nodes) != 1 {
			t.Fatalf("%s: the unmutated module does not load: %s", p, diags.Error())
		}
		src := orig[p].Data
		f, diags := hclsyntax.ParseConfig(src, p, hcl.InitialPos)
		if diags.HasErrors() {
			t.Fatalf("%s: %s", p, diags.Error())
		}
		for _, rng := range attributeValueRanges(f.Body.(*hclsyntax.Body)) {
			for _, val := range hostileValues {
				mfs := fstest.MapFS{}
				for k, v := range orig {
					mfs[k] = v
				}
				mfs[p] = &fstest.MapFile{Data: []byte(string(src[:rng.Start.Byte]) + val + string(src[rng.End.Byte:]))}
				lintWith(t, fmt.Sprintf("%s:%d replaced by %s", p, rng.Start.Line, val), root, mfs)
				runs++
			}
		}
	}
	if runs < 1000 {
		t.Errorf("only %d mutated modules; want many more", runs)
	}
	t.Logf("%d mutated modules", runs)
}
