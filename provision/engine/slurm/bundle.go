package slurm

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/gpuform/gpuform/internal/jsonformat"
	"github.com/gpuform/gpuform/internal/readlimit"
	"github.com/gpuform/gpuform/provision/bench"
	"github.com/gpuform/gpuform/provision/verify"
	"github.com/gpuform/gpuform/provision/verify/nccltest"
	"github.com/gpuform/gpuform/spec"
)

// Bundle is what every node needs to verify itself as the controller
// would have verified it over SSH, in one file sbcast sends (no shared
// filesystem is assumed): the spec's files as the controller loaded them
// (its directory, the lock file, local modules, -var-file files), the
// -var values in order, the run's settings, and which spec host and node
// block each Slurm node is. The node loads the spec from these files
// exactly as the controller did, so it judges against the same
// expectation.
type Bundle struct {
	FormatVersion string `json:"format_version"`
	// Files are the spec's files by path relative to Root.
	Files map[string][]byte `json:"files"`
	// Dir is the spec directory relative to Root ("." when it is Root).
	Dir string `json:"dir"`
	// Vars are -var and -var-file in command-line order; a -var-file's
	// value is its file's path relative to Root.
	Vars []spec.VarArg `json:"vars,omitempty"`
	// Tier is the verify tier each node runs.
	Tier verify.Tier `json:"tier"`
	// Processes is verify -processes.
	Processes bool `json:"processes,omitempty"`
	// Nodes maps each Slurm node to what it verifies as.
	Nodes map[string]BundleNode `json:"nodes"`
	// MultiNode are, at the fleet tier, the multi-node results each spec
	// host is judged on (runner.MultiNode.ForHost), run by the engine
	// before the nodes verify themselves.
	MultiNode map[string]map[string]nccltest.Result `json:"multi_node,omitempty"`
	// Bench, when set, makes the nodes run bench instead of verify.
	Bench *BenchRun `json:"bench,omitempty"`
}

// BenchRun is what bench -engine slurm asks of each node.
type BenchRun struct {
	// Layers are -layers (none: every layer).
	Layers []bench.Layer `json:"layers,omitempty"`
	// Budget is -budget (0: the spec's bench { timeout }).
	Budget time.Duration `json:"budget_ns,omitempty"`
	// Groups are, by spec host, its group's multi-node run
	// (bench.RunMultiNode), made before the nodes bench themselves.
	Groups map[string]bench.GroupRun `json:"groups,omitempty"`
	// Remote are, by spec host, its node-to-node NIC runs (by its NIC),
	// made as srun steps before the nodes bench themselves.
	Remote map[string]map[string]bench.RemoteNIC `json:"remote,omitempty"`
}

// BundleNode is one Slurm node's place in the spec.
type BundleNode struct {
	// Host is the spec's host name (what the report calls it).
	Host string `json:"host"`
	// Node is the node block it belongs to.
	Node string `json:"node"`
}

// maxBundle bounds a bundle read on a node: a spec is kilobytes.
const maxBundle = 64 << 20

// NewBundle puts together the bundle of cfg, loaded from dir with vars.
func NewBundle(cfg *spec.Config, dir string, vars []spec.VarArg, tier verify.Tier, processes bool, nodes map[string]BundleNode) (*Bundle, error) {
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	byAbs := map[string][]byte{}
	for name, f := range cfg.Files {
		if strings.HasPrefix(name, "gpuform:/") || f == nil {
			continue // a built-in module: the node's gpuform has it
		}
		abs, err := filepath.Abs(name)
		if err != nil {
			return nil, err
		}
		byAbs[abs] = f.Bytes
	}
	var outVars []spec.VarArg
	for _, v := range vars {
		if v.File {
			abs, err := filepath.Abs(v.Value)
			if err != nil {
				return nil, err
			}
			if _, ok := byAbs[abs]; !ok {
				b, err := readlimit.ReadFile(abs, maxBundle)
				if err != nil {
					return nil, fmt.Errorf("-var-file: %w", err)
				}
				byAbs[abs] = b
			}
			v.Value = abs
		}
		outVars = append(outVars, v)
	}
	// The root is above the spec directory, so the directory keeps its
	// name on the node: a spec without gpuform { name } is named after
	// it (spec.DefaultSpecName), and ownership records carry that name.
	root := filepath.Dir(absDir)
	for abs := range byAbs {
		for !within(abs, root) {
			root = filepath.Dir(root)
		}
	}
	b := &Bundle{FormatVersion: jsonformat.Version, Files: map[string][]byte{}, Tier: tier, Processes: processes, Nodes: nodes}
	for abs, data := range byAbs {
		rel, _ := filepath.Rel(root, abs)
		b.Files[filepath.ToSlash(rel)] = data
	}
	b.Dir, _ = filepath.Rel(root, absDir)
	b.Dir = filepath.ToSlash(b.Dir)
	for i, v := range outVars {
		if v.File {
			rel, _ := filepath.Rel(root, v.Value)
			outVars[i].Value = filepath.ToSlash(rel)
		}
	}
	b.Vars = outVars
	return b, nil
}

func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// Write writes the bundle to path, readable by its owner only (a spec's
// variables may be sensitive).
func (b *Bundle) Write(path string) error {
	data, err := json.Marshal(b)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

// ReadBundle reads a bundle written by Write.
func ReadBundle(path string) (*Bundle, error) {
	data, err := readlimit.ReadRegularFile(path, maxBundle)
	if err != nil {
		return nil, err
	}
	var b Bundle
	if err := json.Unmarshal(data, &b); err != nil {
		return nil, fmt.Errorf("%s is not a gpuform engine bundle: %v", path, err)
	}
	if b.FormatVersion == "" || b.Nodes == nil {
		return nil, fmt.Errorf("%s is not a gpuform engine bundle", path)
	}
	return &b, nil
}

// Unpack writes the bundle's files under dir (a fresh private directory)
// and returns the spec directory and the -var arguments pointing into it.
// Every path must stay inside dir.
func (b *Bundle) Unpack(dir string) (string, []spec.VarArg, error) {
	names := make([]string, 0, len(b.Files))
	for n := range b.Files {
		names = append(names, n)
	}
	sort.Strings(names)
	inside := func(rel string) (string, error) {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if filepath.IsAbs(rel) || !within(p, dir) {
			return "", fmt.Errorf("bundle path %q leaves its directory", rel)
		}
		return p, nil
	}
	for _, n := range names {
		p, err := inside(n)
		if err != nil {
			return "", nil, err
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return "", nil, err
		}
		if err := os.WriteFile(p, b.Files[n], 0o600); err != nil {
			return "", nil, err
		}
	}
	specDir, err := inside(b.Dir)
	if err != nil {
		return "", nil, err
	}
	if err := os.MkdirAll(specDir, 0o700); err != nil {
		return "", nil, err
	}
	vars := make([]spec.VarArg, len(b.Vars))
	for i, v := range b.Vars {
		if v.File {
			p, err := inside(v.Value)
			if err != nil {
				return "", nil, err
			}
			v.Value = p
		}
		vars[i] = v
	}
	return specDir, vars, nil
}
