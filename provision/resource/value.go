package resource

import (
	"strconv"

	"github.com/gpuform/gpuform/provision/facts"
)

// Kind is what an attribute's value is, beyond its text: the plan's JSON
// writes a Bool or Number attribute as a JSON boolean or number, so that
// readers need not parse "false" or "512".
type Kind int

const (
	// String is text (versions, paths, sysctl values, which the kernel
	// reads as text and may hold several numbers).
	String Kind = iota
	// Bool is "true" or "false".
	Bool
	// Number is a decimal integer.
	Number
)

// Value is one attribute's value: the text the resource compares and
// shows, and the kind of value it is. The resource that reads or wants the
// attribute makes it with StringVal, BoolVal or NumberVal, so the kind is
// said where the value is made, and a diff compares kind and text alike.
type Value struct {
	// Kind says whether Text is a boolean, a number or text.
	Kind Kind
	// Text is the value as the resource reads it ("false", "580.95.05").
	Text string
}

// StringVal is text s.
func StringVal(s string) Value { return Value{Kind: String, Text: s} }

// BoolVal is b, as "true" or "false".
func BoolVal(b bool) Value { return Value{Kind: Bool, Text: strconv.FormatBool(b)} }

// NumberVal is the decimal integer n.
func NumberVal[N ~int | ~int64 | ~uint64](n N) Value {
	if n < 0 {
		return Value{Kind: Number, Text: strconv.FormatInt(int64(n), 10)}
	}
	return Value{Kind: Number, Text: strconv.FormatUint(uint64(n), 10)}
}

// Values are a resource's attributes by name, as Change's Before and After
// hold them.
type Values map[string]Value

// stringVals is m as text attributes: the keys of a file gpuform merges
// into (sysctl, limits, nccl.conf, daemon.json) are text, which the
// program reading the file interprets.
func stringVals(m map[string]string) Values {
	if m == nil {
		return nil
	}
	out := make(Values, len(m))
	for k, v := range m {
		out[k] = StringVal(v)
	}
	return out
}

// textAttrs is a fileResource's attrs for a file whose attributes are all
// text (see stringVals).
func textAttrs(read func(n *facts.Node, content string, exists bool) map[string]string) func(*facts.Node, string, bool) Values {
	return func(n *facts.Node, content string, exists bool) Values { return stringVals(read(n, content, exists)) }
}
