package resource

// Action is what a change does to a resource. Its value is the symbol the
// human plan prints, as in Terraform's plans.Action.
type Action rune

const (
	// NoOp means the resource already has its desired value.
	NoOp Action = 0
	// Create means the resource is absent and will be created.
	Create Action = '+'
	// Update means the resource exists and will be changed in place.
	Update Action = '~'
	// Delete means a resource gpuform created is no longer wanted.
	Delete Action = '-'
)

// String returns the action's name as the JSON plan spells it.
func (a Action) String() string {
	switch a {
	case Create:
		return "create"
	case Update:
		return "update"
	case Delete:
		return "delete"
	}
	return "no-op"
}

// Symbol returns the three-character symbol the human plan prints in front
// of a resource, so that every resource line aligns.
func (a Action) Symbol() string {
	switch a {
	case Create, Update, Delete:
		return "  " + string(a)
	}
	return "   "
}

// ParseAction reads an action name as String writes it.
func ParseAction(s string) (Action, bool) {
	switch s {
	case "create":
		return Create, true
	case "update":
		return Update, true
	case "delete":
		return Delete, true
	case "no-op":
		return NoOp, true
	}
	return NoOp, false
}
