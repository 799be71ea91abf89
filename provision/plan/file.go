package plan

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gpuform/gpuform/internal/jsonformat"
	"github.com/gpuform/gpuform/internal/readlimit"
	"github.com/gpuform/gpuform/spec"
)

// FileKind marks a plan file, so that apply does not mistake another JSON
// document for one.
const FileKind = "gpuform-plan"

// File is a saved plan (-out): the plan, plus what apply needs to make it
// again and check that nothing moved: the spec directory, the variable
// arguments and the targets. Like a Terraform plan file it may hold
// variable values; treat it as sensitive.
type File struct {
	// Kind is FileKind.
	Kind string `json:"kind"`
	// FormatVersion is jsonformat.Version when the file was written.
	FormatVersion string `json:"format_version"`
	// CreatedAt is when the plan was made (UTC, RFC 3339).
	CreatedAt string `json:"created_at"`
	// SpecDir is the spec directory, absolute.
	SpecDir string `json:"spec_dir"`
	// VarArgs are the -var and -var-file arguments, in order.
	VarArgs []spec.VarArg `json:"var_args,omitempty"`
	// Targets are the -target hosts, empty for all.
	Targets []string `json:"targets,omitempty"`
	// TakeOver are the -take-over resources the plan was made with.
	TakeOver []string `json:"take_over,omitempty"`
	// Plan is the plan, with each host's facts fingerprint.
	Plan *Plan `json:"plan"`
}

// NewFile wraps p for saving.
func NewFile(p *Plan, specDir string, varArgs []spec.VarArg, targets []string, now time.Time) (*File, error) {
	abs, err := filepath.Abs(specDir)
	if err != nil {
		return nil, err
	}
	// -var-file paths are relative to where plan ran; apply may run the
	// plan file from anywhere, so they are stored absolute.
	args := make([]spec.VarArg, len(varArgs))
	for i, a := range varArgs {
		if a.File {
			if a.Value, err = filepath.Abs(a.Value); err != nil {
				return nil, err
			}
		}
		args[i] = a
	}
	return &File{Kind: FileKind, FormatVersion: jsonformat.Version, CreatedAt: now.UTC().Format(time.RFC3339), SpecDir: abs, VarArgs: args, Targets: targets, Plan: p}, nil
}

// WriteFile saves f to path atomically (temporary file, then rename), mode
// 0600 because it may hold variable values.
func WriteFile(path string, f *File) error {
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// MaxFileSize bounds the plan files ReadFile reads: a plan of ten thousand
// hosts is a few megabytes, and a file linked to /dev/zero must not be read
// forever.
const MaxFileSize = 256 << 20

// ErrNotPlanFile means the file is not a gpuform plan file.
var ErrNotPlanFile = errors.New("not a gpuform plan file")

// ReadFile loads a plan file, refusing other documents and plan files of
// a different major format version.
func ReadFile(path string) (*File, error) {
	b, err := readlimit.ReadFile(path, MaxFileSize)
	if err != nil {
		return nil, err
	}
	return ParseFile(b)
}

// ParseFile reads a plan file's bytes.
func ParseFile(b []byte) (*File, error) {
	var f File
	err := json.Unmarshal(b, &f)
	if bad := (*FileValueError)(nil); errors.As(err, &bad) && f.Kind == FileKind {
		return nil, fmt.Errorf("plan file: %w; make the plan again", bad)
	}
	if err != nil || f.Kind != FileKind || f.Plan == nil {
		return nil, ErrNotPlanFile
	}
	for _, h := range f.Plan.Hosts {
		if h == nil || h.Host == "" {
			return nil, fmt.Errorf("%w: a host entry is empty", ErrNotPlanFile)
		}
	}
	if !jsonformat.Compatible(f.FormatVersion) {
		return nil, fmt.Errorf("plan file format %s cannot be read by this gpuform (it reads %s.x); make the plan again", f.FormatVersion, jsonformat.Major())
	}
	return &f, nil
}

// StaleError says a saved plan no longer matches the hosts or the spec.
type StaleError struct {
	// Hosts maps each stale host to why.
	Hosts map[string]string
}

func (e *StaleError) Error() string {
	var b strings.Builder
	b.WriteString("saved plan is stale: ")
	first := true
	for _, h := range sortedHostKeys(e.Hosts) {
		if !first {
			b.WriteString("; ")
		}
		first = false
		b.WriteString(h + ": " + e.Hosts[h])
	}
	b.WriteString(". Run gpuform plan again")
	return b.String()
}

// CheckSaved compares a saved plan with a fresh one made from the same spec
// and returns a *StaleError when any host's facts fingerprint or planned
// changes differ, or when a host failed to probe, so that apply runs only
// what the operator reviewed.
func CheckSaved(saved, fresh *Plan) error {
	stale := map[string]string{}
	for _, s := range saved.Hosts {
		f := fresh.Host(s.Host)
		switch {
		case s.Error != "":
			stale[s.Host] = "the host failed to plan when the plan was made (" + s.Error + ")"
		case f == nil:
			stale[s.Host] = "the host is no longer in the spec"
		case strings.HasPrefix(f.Error, "preflight: "):
			// Preflight's checks (a registry that answered when the
			// plan was made and does not now).
			stale[s.Host] = "the host fails the checks before apply now (" + f.Error + ")"
		case f.Error != "":
			stale[s.Host] = "the host cannot be probed now (" + f.Error + ")"
		case f.FactsFingerprint != s.FactsFingerprint:
			stale[s.Host] = fmt.Sprintf("the host changed since the plan was made (facts %s, now %s)", short(s.FactsFingerprint), short(f.FactsFingerprint))
		case f.signature() != s.signature():
			stale[s.Host] = "the spec changed since the plan was made"
		}
	}
	if len(fresh.Hosts) != len(saved.Hosts) {
		for _, f := range fresh.Hosts {
			if saved.Host(f.Host) == nil {
				stale[f.Host] = "the host was not in the saved plan"
			}
		}
	}
	if len(stale) > 0 {
		return &StaleError{Hosts: stale}
	}
	return nil
}

func short(fp string) string {
	if len(fp) > 12 {
		return fp[:12]
	}
	return fp
}
