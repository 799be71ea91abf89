package spec

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
)

// SpecFileSuffix marks spec files in a directory.
const SpecFileSuffix = ".gpuform.hcl"

// AutoVarsSuffix marks variable files that are loaded without -var-file.
const AutoVarsSuffix = ".auto.gpuvars.hcl"

// LoadOptions tells Load where variable values and built-in modules come from.
type LoadOptions struct {
	// VarArgs are the -var and -var-file arguments in command-line order.
	VarArgs []VarArg
	// Environ is the process environment (GPUFORM_VAR_name values); nil means none.
	Environ []string
	// BuiltinModules resolves "gpuform/NAME" sources; nil disables them.
	BuiltinModules fs.FS
	// BinaryVersion is checked against required_version; empty skips the check.
	BinaryVersion string
	// Origin is where this run applies the spec from; every node's Owner
	// carries it with the spec's name.
	Origin Origin
	// GPUModels is the knowledge base's GPU model table. When set, a
	// hardware gpu_model it does not know is an error with "did you mean",
	// unless gpu_model_unknown_ok = true. It is given, not imported, because
	// the knowledge base (kb) imports spec.
	GPUModels *GPUModelTable

	// defaultName names the spec after its directory when gpuform { name }
	// is not written: Load does, LoadFiles has no directory to name it by.
	defaultName bool
}

// Load reads every *.gpuform.hcl file in dir (not recursively), applies
// variable values from every source, and evaluates the spec. It always
// returns a Config, partial when diagnostics contain errors, so that callers
// such as lint can still look at what did load.
func Load(dir string, opts LoadOptions) (*Config, hcl.Diagnostics) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return emptyConfig(dir), hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Cannot read spec directory",
			Detail:   fmt.Sprintf("gpuform reads a spec from a directory of *%s files: %s", SpecFileSuffix, err),
		}}
	}
	files := map[string][]byte{}
	var diags hcl.Diagnostics
	for _, e := range entries {
		if e.IsDir() || !(strings.HasSuffix(e.Name(), SpecFileSuffix) || strings.HasSuffix(e.Name(), AutoVarsSuffix)) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		src, err := readSpecFile(p)
		if err != nil {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Cannot read spec file",
				Detail:   err.Error(),
			})
			continue
		}
		files[p] = src
	}
	opts.defaultName = true
	cfg, more := loadSources(dir, files, opts, osReader{})
	return cfg, append(diags, more...)
}

// LoadFiles evaluates a spec given as file name → source, as if the files
// were one directory. Names ending in .auto.gpuvars.hcl are variable files.
// Local module sources are read from the real filesystem relative to ".".
// With no directory to name it after, such a spec claims ownership of its
// resources on hosts (Node.Owner) only when gpuform { name } names it.
func LoadFiles(files map[string][]byte, opts LoadOptions) (*Config, hcl.Diagnostics) {
	return loadSources(".", files, opts, osReader{})
}

// fileReader is how module sources are read: from disk or from the
// embedded built-in modules.
type fileReader interface {
	readDir(dir string) (map[string][]byte, error)
}

type osReader struct{}

func (osReader) readDir(dir string) (map[string][]byte, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), SpecFileSuffix) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		src, err := readSpecFile(p)
		if err != nil {
			return nil, err
		}
		out[p] = src
	}
	return out, nil
}

type fsReader struct {
	fsys   fs.FS
	prefix string // shown in file names, e.g. "gpuform:/"
}

func (r fsReader) readDir(dir string) (map[string][]byte, error) {
	entries, err := fs.ReadDir(r.fsys, dir)
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), SpecFileSuffix) {
			continue
		}
		src, err := fs.ReadFile(r.fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out[r.prefix+"/"+path.Join(dir, e.Name())] = src
	}
	return out, nil
}

func emptyConfig(dir string) *Config {
	return &Config{
		Dir:         dir,
		Files:       map[string]*hcl.File{},
		Variables:   map[string]*Variable{},
		Locals:      map[string]*Local{},
		Inventories: map[string]*Inventory{},
		Modules:     map[string]*ModuleCall{},
		Outputs:     map[string]*Output{},
	}
}

// loadSources is the shared body of Load and LoadFiles.
func loadSources(dir string, files map[string][]byte, opts LoadOptions, rd fileReader) (*Config, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	cfg := emptyConfig(dir)
	parser := hclparse.NewParser()

	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)

	var specFiles, autoVarFiles []*hcl.File
	ld := &loader{cfg: cfg, opts: opts, reader: rd, parser: parser, depth: 0}
	if d := ld.limits().readSources(files, dir); d.HasErrors() {
		return cfg, d
	}
	for _, n := range names {
		if d := CheckNesting(files[n], n); d.HasErrors() {
			diags = append(diags, d...)
			continue
		}
		f, d := parser.ParseHCL(files[n], n)
		diags = append(diags, d...)
		if f == nil {
			continue
		}
		bounds(f.Body)
		if strings.HasSuffix(n, AutoVarsSuffix) {
			autoVarFiles = append(autoVarFiles, f)
		} else {
			specFiles = append(specFiles, f)
		}
	}
	if len(specFiles) == 0 && !diags.HasErrors() {
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "No spec files",
			Detail:   fmt.Sprintf("The directory %s contains no *%s files.", dir, SpecFileSuffix),
		})
	}

	// An older binary must say one clear thing about required_version
	// instead of a cascade of errors about syntax it does not know yet.
	if opts.BinaryVersion != "" {
		if d := checkRequiredVersion(specFiles, opts.BinaryVersion); d.HasErrors() {
			cfg.Files = parser.Files()
			return cfg, append(diags, d...)
		}
	}

	diags = append(diags, ld.decodeFiles(specFiles, true)...)
	diags = append(diags, ld.resolveVariables(autoVarFiles)...)
	diags = append(diags, ld.evaluate()...)
	if !cfg.Name.Set && opts.defaultName {
		cfg.Name.V = DefaultSpecName(dir)
	}
	for _, n := range cfg.Nodes {
		n.Owner = Owner{Spec: cfg.Name.V, Origin: opts.Origin}
	}
	cfg.Files = parser.Files()
	collectSensitive(cfg)
	diags = append(diags, checkGPUModels(cfg, opts.GPUModels)...)
	diags = explainNumberVersions(diags, cfg.Files, cfg.Variables)
	diags = append(diags, checkLossyStringDefaults(cfg.Files, cfg.Variables)...)
	return cfg, redactDiagnostics(cfg.Redactor(), explainModuleOutputs(explainLimits(diags), cfg.Modules))
}

// loader carries the state of one load: the config being filled in and the
// evaluator's memo. It lives only for the duration of one Load call.
type loader struct {
	cfg    *Config
	opts   LoadOptions
	reader fileReader
	parser *hclparse.Parser
	depth  int
	// budget is what this load may still spend evaluating, shared with
	// every module it calls (see limits.go).
	budget *loadLimits
	// sourceChain is the chain of module sources from the root, to refuse a
	// module that includes itself.
	sourceChain []string

	localDecls     map[string]*hcl.Attribute
	inventoryDecls map[string]*hcl.Block
	moduleDecls    map[string]*hcl.Block
	nodeBlocks     []*hcl.Block
	lintBlocks     []*hcl.Block

	eval *evaluator
}

var rootSchema = &hcl.BodySchema{
	Blocks: []hcl.BlockHeaderSchema{
		{Type: "gpuform"},
		{Type: "variable", LabelNames: []string{"name"}},
		{Type: "locals"},
		{Type: "inventory", LabelNames: []string{"name"}},
		{Type: "module", LabelNames: []string{"name"}},
		{Type: "node", LabelNames: []string{"name"}},
		{Type: "output", LabelNames: []string{"name"}},
		{Type: "lint"},
	},
}

// decodeFiles collects declarations from every file, reporting duplicates
// with the range of the first declaration.
func (ld *loader) decodeFiles(files []*hcl.File, root bool) hcl.Diagnostics {
	var diags hcl.Diagnostics
	ld.localDecls = map[string]*hcl.Attribute{}
	ld.inventoryDecls = map[string]*hcl.Block{}
	ld.moduleDecls = map[string]*hcl.Block{}
	for _, f := range files {
		content, d := f.Body.Content(rootSchema)
		diags = append(diags, d...)
		for _, b := range content.Blocks {
			switch b.Type {
			case "gpuform":
				diags = append(diags, ld.decodeGpuformBlock(b, root)...)
			case "variable":
				v, d := decodeVariableBlock(b)
				diags = append(diags, d...)
				if v == nil {
					continue
				}
				if prev, ok := ld.cfg.Variables[v.Name]; ok {
					diags = append(diags, duplicateDiag("variable", v.Name, b.LabelRanges[0], prev.DeclRange))
					continue
				}
				ld.cfg.Variables[v.Name] = v
			case "locals":
				attrs, d := b.Body.JustAttributes()
				diags = append(diags, d...)
				for name, a := range attrs {
					if prev, ok := ld.localDecls[name]; ok {
						diags = append(diags, duplicateDiag("local value", name, a.NameRange, prev.NameRange))
						continue
					}
					ld.localDecls[name] = a
				}
			case "inventory":
				if !root {
					diags = append(diags, notInModuleDiag(b))
					continue
				}
				if prev, ok := ld.inventoryDecls[b.Labels[0]]; ok {
					diags = append(diags, duplicateDiag("inventory", b.Labels[0], b.LabelRanges[0], prev.DefRange))
					continue
				}
				if d := checkName("inventory", b.Labels[0], b.LabelRanges[0]); d != nil {
					diags = append(diags, d)
				}
				ld.inventoryDecls[b.Labels[0]] = b
			case "module":
				if prev, ok := ld.moduleDecls[b.Labels[0]]; ok {
					diags = append(diags, duplicateDiag("module", b.Labels[0], b.LabelRanges[0], prev.DefRange))
					continue
				}
				if d := checkName("module", b.Labels[0], b.LabelRanges[0]); d != nil {
					diags = append(diags, d)
				}
				ld.moduleDecls[b.Labels[0]] = b
			case "node":
				if !root {
					diags = append(diags, notInModuleDiag(b))
					continue
				}
				for _, prev := range ld.nodeBlocks {
					if prev.Labels[0] == b.Labels[0] {
						diags = append(diags, duplicateDiag("node", b.Labels[0], b.LabelRanges[0], prev.DefRange))
					}
				}
				if d := checkName("node", b.Labels[0], b.LabelRanges[0]); d != nil {
					diags = append(diags, d)
				}
				ld.nodeBlocks = append(ld.nodeBlocks, b)
			case "output":
				o, d := decodeOutputBlock(b)
				diags = append(diags, d...)
				if prev, ok := ld.cfg.Outputs[o.Name]; ok {
					diags = append(diags, duplicateDiag("output", o.Name, b.LabelRanges[0], prev.DeclRange))
					continue
				}
				ld.cfg.Outputs[o.Name] = o
			case "lint":
				if !root {
					diags = append(diags, notInModuleDiag(b))
					continue
				}
				if len(ld.lintBlocks) > 0 {
					diags = append(diags, duplicateDiag("lint", "", b.DefRange, ld.lintBlocks[0].DefRange))
					continue
				}
				ld.lintBlocks = append(ld.lintBlocks, b)
				lc, d := DecodeLintBlock(b)
				diags = append(diags, d...)
				ld.cfg.Lint = lc
			}
		}
	}
	return diags
}

func duplicateDiag(kind, name string, subject, prev hcl.Range) *hcl.Diagnostic {
	what := fmt.Sprintf("%s %q", kind, name)
	if name == "" {
		what = kind + " block"
	}
	article := "A"
	if strings.ContainsRune("aeiou", rune(kind[0])) {
		article = "An"
	}
	detail := fmt.Sprintf("%s %s was already declared at %s. Each name may be declared once per spec directory.", article, what, prev)
	if name == "" {
		// Unnamed blocks (driver, nvml, lint, …) are limited to one per
		// enclosing block; "each name" would send the reader looking for one.
		detail = fmt.Sprintf("Only one %s is allowed here; the first is at %s.", what, prev)
	}
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  fmt.Sprintf("Duplicate %s", what),
		Detail:   detail,
		Subject:  subject.Ptr(),
	}
}

func notInModuleDiag(b *hcl.Block) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  fmt.Sprintf("%s block in a module", strings.ToUpper(b.Type[:1])+b.Type[1:]),
		Detail:   fmt.Sprintf("A module provides values (variables, locals, outputs); %s blocks belong in the root spec, which uses the module's outputs.", b.Type),
		Subject:  b.DefRange.Ptr(),
	}
}

// checkName keeps names usable in references (inventory.NAME) and in output.
func checkName(kind, name string, rng hcl.Range) *hcl.Diagnostic {
	if validIdentifier(name) {
		return nil
	}
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  fmt.Sprintf("Invalid %s name", kind),
		Detail:   fmt.Sprintf("%q is not a valid name: start with a letter and use letters, digits, underscores and dashes.", name),
		Subject:  rng.Ptr(),
	}
}

func validIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		letter := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_'
		if i == 0 && !letter {
			return false
		}
		if !letter && !(r >= '0' && r <= '9') && r != '-' {
			return false
		}
	}
	return true
}
