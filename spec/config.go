package spec

import (
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// Attr is one decoded attribute value together with where it was written.
// Set is false when the attribute was omitted and V holds the default.
type Attr[T any] struct {
	// V is the decoded value.
	V T
	// Set reports whether the spec wrote the attribute.
	Set bool
	// Range is the range of the attribute's expression (or of the enclosing
	// block's header when the value is a default).
	Range hcl.Range
	// Sensitive is true when the value was derived from a sensitive
	// variable or output: outputs print Redacted instead of V.
	Sensitive bool
}

// Config is an evaluated spec directory.
type Config struct {
	// Dir is the directory the spec was loaded from.
	Dir string
	// Files holds every parsed file, by file name, for rendering snippets.
	Files map[string]*hcl.File
	// RequiredVersion is the gpuform block's constraint, if any.
	RequiredVersion *Attr[string]
	// Name is gpuform { name }, or DefaultSpecName(Dir) when not written
	// (Load; LoadFiles leaves it ""): the name the spec's resources are
	// recorded under on each host.
	Name Attr[string]
	// Variables are the declared input variables, by name.
	Variables map[string]*Variable
	// Locals are the local values, by name.
	Locals map[string]*Local
	// Inventories are the declared host groups, by name.
	Inventories map[string]*Inventory
	// Modules are the module calls, by name.
	Modules map[string]*ModuleCall
	// Nodes are the node blocks in declaration order.
	Nodes []*Node
	// Outputs are the declared outputs, by name.
	Outputs map[string]*Output
	// Lint is the in-spec lint configuration, if a lint block was written.
	Lint *LintConfig

	// sensitiveStrings are the texts of sensitive values, for Redactor.
	sensitiveStrings []string
}

// Variable is a declared input variable and the value it resolved to.
type Variable struct {
	// Name is the variable's label.
	Name string
	// Description is the variable's documentation.
	Description string
	// Type is the type constraint (cty.DynamicPseudoType when omitted).
	Type cty.Type
	// Default is the default value, or cty.NilVal when there is none.
	Default cty.Value
	// DefaultRange is where the default is written, when it is.
	DefaultRange *hcl.Range
	// Sensitive hides the value in every output.
	Sensitive bool
	// Value is the final value after every source was applied.
	Value cty.Value
	// ValueSource says where Value came from ("default", "env", "-var", a file name).
	ValueSource string
	// Validations are the variable's validation rules.
	Validations []*VariableValidation
	// DeclRange is the range of the block header.
	DeclRange hcl.Range
}

// VariableValidation is one validation block of a variable.
type VariableValidation struct {
	// Condition must evaluate to true for the value to be accepted.
	Condition hcl.Expression
	// ErrorMessage is shown when Condition is false.
	ErrorMessage string
	// DeclRange is the range of the block header.
	DeclRange hcl.Range
}

// Local is a named value from a locals block.
type Local struct {
	// Name is the local's name.
	Name string
	// Expr is its expression.
	Expr hcl.Expression
	// Value is the evaluated value.
	Value cty.Value
	// DeclRange is the range of the attribute.
	DeclRange hcl.Range
}

// Output is a value a module exposes to its caller.
type Output struct {
	// Name is the output's label.
	Name string
	// Description documents the output.
	Description string
	// Expr is the value expression.
	Expr hcl.Expression
	// Value is the evaluated value.
	Value cty.Value
	// Sensitive hides the value when printed.
	Sensitive bool
	// DeclRange is the range of the block header.
	DeclRange hcl.Range
}

// Inventory is a named group of hosts and how to reach them.
type Inventory struct {
	// Name is the inventory's label.
	Name string
	// Hosts are the expanded host names in written order.
	Hosts []Attr[string]
	// User is the SSH login user; empty means ~/.ssh/config or the local user.
	User Attr[string]
	// Port is the SSH port; zero means ~/.ssh/config or 22.
	Port Attr[int]
	// Jump is a ProxyJump chain ("bastion" or "a,b").
	Jump Attr[string]
	// Become is the privilege method: "" or "sudo".
	Become Attr[string]
	// ProbeTimeout bounds connecting to and probing each host ("2m").
	ProbeTimeout Attr[Duration]
	// DeclRange is the range of the block header.
	DeclRange hcl.Range
}

// Host is one target machine of a node, with the connection settings of the
// inventory it came from.
type Host struct {
	// Name is the host name (or sim:// address).
	Name string
	// User is the SSH login user from the inventory.
	User string
	// Port is the SSH port from the inventory; 0 means the default.
	Port int
	// Jump is the ProxyJump chain from the inventory.
	Jump string
	// Become is the privilege method from the inventory ("" or "sudo").
	Become string
	// ProbeTimeout is the inventory's probe_timeout; zero leaves the
	// limit to the command.
	ProbeTimeout time.Duration
	// Inventory names the inventory the host came from, if any.
	Inventory string
	// Range is where the host was written.
	Range hcl.Range
}

// ModuleCall is a module block: a source and the input values given to it.
type ModuleCall struct {
	// Name is the module's label.
	Name string
	// Source is "gpuform/NAME" for a built-in module or a relative path.
	Source Attr[string]
	// Config is the loaded module, evaluated with the call's inputs.
	Config *Config
	// Outputs holds the module's output values.
	Outputs map[string]cty.Value
	// DeclRange is the range of the block header.
	DeclRange hcl.Range
}

// LintConfig is the lint block of a spec or a .gpuform-lint.hcl file.
type LintConfig struct {
	// Rules are the per-rule settings, in written order.
	Rules []*LintRuleConfig
	// DeclRange is the range of the block header.
	DeclRange hcl.Range
}

// LintRuleConfig enables, disables or re-grades one rule.
type LintRuleConfig struct {
	// Name is the rule's snake_case name as written.
	Name string
	// NameRange is the range of the label, for "unknown rule" findings.
	NameRange hcl.Range
	// Enabled is false to switch the rule off.
	Enabled Attr[bool]
	// Severity overrides the rule's severity ("error", "warning", "info").
	Severity Attr[string]
}
