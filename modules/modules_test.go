package modules_test

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
)

// moduleDirs lists every built-in module: each directory of this package
// that holds at least one *.gpuform.hcl file.
func moduleDirs(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range entries {
		if !e.IsDir() || e.Name() == "testdata" {
			continue
		}
		files, _ := filepath.Glob(filepath.Join(e.Name(), "*.gpuform.hcl"))
		if len(files) == 0 {
			t.Errorf("directory %s holds no *.gpuform.hcl file; every folder here is a built-in module", e.Name())
			continue
		}
		dirs = append(dirs, e.Name())
	}
	sort.Strings(dirs)
	if len(dirs) == 0 {
		t.Fatal("no built-in modules found")
	}
	return dirs
}

// moduleSchema is what a module file may contain at the top level: modules
// describe hardware or software sets and never target hosts themselves.
var moduleSchema = &hcl.BodySchema{
	Blocks: []hcl.BlockHeaderSchema{
		{Type: "variable", LabelNames: []string{"name"}},
		{Type: "locals"},
		{Type: "output", LabelNames: []string{"name"}},
		{Type: "module", LabelNames: []string{"name"}},
	},
}

func TestModulesParse(t *testing.T) {
	for _, dir := range moduleDirs(t) {
		t.Run(dir, func(t *testing.T) {
			files, _ := filepath.Glob(filepath.Join(dir, "*.gpuform.hcl"))
			p := hclparse.NewParser()
			outputs := map[string]bool{}
			for _, f := range files {
				file, diags := p.ParseHCLFile(f)
				if diags.HasErrors() {
					t.Fatalf("%s: %s", f, diags.Error())
				}
				content, diags := file.Body.Content(moduleSchema)
				if diags.HasErrors() {
					t.Errorf("%s: only variable, locals, output and module blocks belong in a module: %s", f, diags.Error())
					continue
				}
				for _, b := range content.Blocks {
					if b.Type == "output" {
						outputs[b.Labels[0]] = true
					}
				}
			}
			// A hardware profile exports "hardware"; a stack baseline exports versions.
			switch {
			case strings.HasPrefix(dir, "stack-"):
				for _, want := range []string{"driver_version", "kernel_module", "cuda_version", "nccl_version", "container_toolkit_version"} {
					if !outputs[want] {
						t.Errorf("stack module %s has no output %q", dir, want)
					}
				}
			default:
				if !outputs["hardware"] {
					t.Errorf("hardware module %s has no output \"hardware\"", dir)
				}
			}
		})
	}
}

// TestModulesHaveSources checks that every module names where its facts come
// from: a URL in the file's leading comment.
func TestModulesHaveSources(t *testing.T) {
	for _, dir := range moduleDirs(t) {
		t.Run(dir, func(t *testing.T) {
			files, _ := filepath.Glob(filepath.Join(dir, "*.gpuform.hcl"))
			found := false
			for _, f := range files {
				src, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(string(src), "https://") {
					found = true
				}
			}
			if !found {
				t.Errorf("module %s cites no public source (no https:// URL in its comments)", dir)
			}
		})
	}
}

// TestReadmeListsEveryModule keeps modules/README.md in step with the folders.
func TestReadmeListsEveryModule(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range moduleDirs(t) {
		if !strings.Contains(string(readme), "gpuform/"+dir) {
			t.Errorf("README.md does not document gpuform/%s", dir)
		}
	}
}
