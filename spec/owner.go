package spec

// Origin is where a run of gpuform applies a spec from, as the command that
// loads it finds out (git, the user): recorded on each host next to the
// spec's name so that an operator, or another spec, can tell who manages a
// resource and where to change it. The spec itself never says these.
type Origin struct {
	// Commit is the git commit of the spec directory, with "-dirty" when
	// it has uncommitted changes; "" when the spec is not in git.
	Commit string
	// Source is where the spec lives: the git remote and the path inside
	// the repository, or the absolute directory when it is not in git.
	Source string
	// AppliedBy is user@machine of whoever runs gpuform.
	AppliedBy string
	// TakeOver names the resources this run may take from the spec that
	// manages them now (-take-over).
	TakeOver []string
}

// Owner is the identity every node block of a spec claims its resources
// under: the spec's name (gpuform { name }) and the Origin of this run. The
// zero Owner claims nothing, and planning with it ignores ownership (tests
// that build a Node by hand).
type Owner struct {
	// Spec is the spec's name.
	Spec string
	Origin
}

// Claims reports whether o takes part in ownership at all.
func (o Owner) Claims() bool { return o.Spec != "" }

// TakesOver reports whether this run may take resource res from another
// spec.
func (o Owner) TakesOver(res string) bool {
	for _, r := range o.TakeOver {
		if r == res {
			return true
		}
	}
	return false
}
