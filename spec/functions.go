package spec

import (
	"fmt"
	"math/big"
	"net/netip"

	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// functions returns the function table a spec can call: go-cty's standard
// library under the names Terraform users know, plus try/can and the cidr
// helpers. It is built per load so nothing is shared between loads.
func functions() map[string]function.Function {
	return map[string]function.Function{
		"abs":             stdlib.AbsoluteFunc,
		"can":             tryfunc.CanFunc,
		"ceil":            stdlib.CeilFunc,
		"chomp":           stdlib.ChompFunc,
		"chunklist":       stdlib.ChunklistFunc,
		"cidrhost":        cidrHostFunc,
		"cidrnetmask":     cidrNetmaskFunc,
		"cidrsubnet":      cidrSubnetFunc,
		"coalesce":        stdlib.CoalesceFunc,
		"coalescelist":    stdlib.CoalesceListFunc,
		"compact":         stdlib.CompactFunc,
		"concat":          stdlib.ConcatFunc,
		"contains":        stdlib.ContainsFunc,
		"csvdecode":       stdlib.CSVDecodeFunc,
		"distinct":        stdlib.DistinctFunc,
		"element":         stdlib.ElementFunc,
		"flatten":         stdlib.FlattenFunc,
		"floor":           stdlib.FloorFunc,
		"format":          stdlib.FormatFunc,
		"formatdate":      stdlib.FormatDateFunc,
		"formatlist":      stdlib.FormatListFunc,
		"indent":          stdlib.IndentFunc,
		"index":           stdlib.IndexFunc,
		"join":            stdlib.JoinFunc,
		"jsondecode":      stdlib.JSONDecodeFunc,
		"jsonencode":      stdlib.JSONEncodeFunc,
		"keys":            stdlib.KeysFunc,
		"length":          lengthFunc,
		"log":             stdlib.LogFunc,
		"lookup":          stdlib.LookupFunc,
		"lower":           stdlib.LowerFunc,
		"max":             stdlib.MaxFunc,
		"merge":           stdlib.MergeFunc,
		"min":             stdlib.MinFunc,
		"parseint":        stdlib.ParseIntFunc,
		"pow":             stdlib.PowFunc,
		"range":           stdlib.RangeFunc,
		"regex":           stdlib.RegexFunc,
		"regexall":        stdlib.RegexAllFunc,
		"regexreplace":    stdlib.RegexReplaceFunc,
		"replace":         stdlib.ReplaceFunc,
		"reverse":         stdlib.ReverseListFunc,
		"setintersection": stdlib.SetIntersectionFunc,
		"setproduct":      stdlib.SetProductFunc,
		"setsubtract":     stdlib.SetSubtractFunc,
		"setunion":        stdlib.SetUnionFunc,
		"signum":          stdlib.SignumFunc,
		"slice":           stdlib.SliceFunc,
		"sort":            stdlib.SortFunc,
		"split":           stdlib.SplitFunc,
		"strlen":          stdlib.StrlenFunc,
		"strrev":          stdlib.ReverseFunc,
		"substr":          stdlib.SubstrFunc,
		"timeadd":         stdlib.TimeAddFunc,
		"title":           stdlib.TitleFunc,
		"tobool":          stdlib.MakeToFunc(cty.Bool),
		"tolist":          stdlib.MakeToFunc(cty.List(cty.DynamicPseudoType)),
		"tomap":           stdlib.MakeToFunc(cty.Map(cty.DynamicPseudoType)),
		"tonumber":        stdlib.MakeToFunc(cty.Number),
		"toset":           stdlib.MakeToFunc(cty.Set(cty.DynamicPseudoType)),
		"tostring":        stdlib.MakeToFunc(cty.String),
		"trim":            stdlib.TrimFunc,
		"trimprefix":      stdlib.TrimPrefixFunc,
		"trimspace":       stdlib.TrimSpaceFunc,
		"trimsuffix":      stdlib.TrimSuffixFunc,
		"try":             tryfunc.TryFunc,
		"upper":           stdlib.UpperFunc,
		"values":          stdlib.ValuesFunc,
		"zipmap":          stdlib.ZipmapFunc,
	}
}

var cidrHostFunc = function.New(&function.Spec{
	Params: []function.Parameter{
		{Name: "prefix", Type: cty.String},
		{Name: "hostnum", Type: cty.Number},
	},
	Type: function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		p, err := netip.ParsePrefix(args[0].AsString())
		if err != nil {
			return cty.UnknownVal(cty.String), function.NewArgError(0, err)
		}
		n, _ := args[1].AsBigFloat().Int(nil)
		addr, err := addToAddr(p.Masked().Addr(), n, p.Bits())
		if err != nil {
			return cty.UnknownVal(cty.String), function.NewArgError(1, err)
		}
		return cty.StringVal(addr.String()), nil
	},
})

var cidrNetmaskFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "prefix", Type: cty.String}},
	Type:   function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		p, err := netip.ParsePrefix(args[0].AsString())
		if err != nil {
			return cty.UnknownVal(cty.String), function.NewArgError(0, err)
		}
		if !p.Addr().Is4() {
			return cty.UnknownVal(cty.String), function.NewArgError(0, fmt.Errorf("only IPv4 prefixes have a netmask"))
		}
		m := ^uint32(0) << (32 - p.Bits())
		if p.Bits() == 0 {
			m = 0
		}
		return cty.StringVal(netip.AddrFrom4([4]byte{byte(m >> 24), byte(m >> 16), byte(m >> 8), byte(m)}).String()), nil
	},
})

var cidrSubnetFunc = function.New(&function.Spec{
	Params: []function.Parameter{
		{Name: "prefix", Type: cty.String},
		{Name: "newbits", Type: cty.Number},
		{Name: "netnum", Type: cty.Number},
	},
	Type: function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		p, err := netip.ParsePrefix(args[0].AsString())
		if err != nil {
			return cty.UnknownVal(cty.String), function.NewArgError(0, err)
		}
		newbits, _ := args[1].AsBigFloat().Int64()
		bits := p.Bits() + int(newbits)
		if newbits < 0 || bits > p.Addr().BitLen() {
			return cty.UnknownVal(cty.String), function.NewArgError(1, fmt.Errorf("%d new bits do not fit in %s", newbits, p))
		}
		n, _ := args[2].AsBigFloat().Int(nil)
		if n.Sign() < 0 || n.BitLen() > int(newbits) {
			return cty.UnknownVal(cty.String), function.NewArgError(2, fmt.Errorf("subnet number %s does not fit in %d bits", n, newbits))
		}
		shift := new(big.Int).Lsh(n, uint(p.Addr().BitLen()-bits))
		addr, err := addToAddr(p.Masked().Addr(), shift, 0)
		if err != nil {
			return cty.UnknownVal(cty.String), function.NewArgError(2, err)
		}
		return cty.StringVal(netip.PrefixFrom(addr, bits).String()), nil
	},
})

// addToAddr adds n to base, refusing results outside base's prefix of the
// given length.
func addToAddr(base netip.Addr, n *big.Int, prefixBits int) (netip.Addr, error) {
	b := base.AsSlice()
	v := new(big.Int).SetBytes(b)
	hostBits := base.BitLen() - prefixBits
	if prefixBits > 0 && (n.Sign() < 0 || n.BitLen() > hostBits) {
		return netip.Addr{}, fmt.Errorf("host number %s does not fit in a /%d", n, prefixBits)
	}
	v.Add(v, n)
	out := v.FillBytes(make([]byte, len(b)))
	a, ok := netip.AddrFromSlice(out)
	if !ok {
		return netip.Addr{}, fmt.Errorf("address out of range")
	}
	return a, nil
}

// lengthFunc is Terraform's length: the elements of a collection or
// structure, or the characters of a string counted as grapheme clusters
// (as strlen counts them). go-cty's own length refuses strings, so a spec
// copied from Terraform would fail on length("abc").
var lengthFunc = function.New(&function.Spec{
	Params: []function.Parameter{{
		Name: "value", Type: cty.DynamicPseudoType,
		AllowDynamicType: true, AllowUnknown: true, AllowMarked: true,
	}},
	Type: func(args []cty.Value) (cty.Type, error) {
		ty := args[0].Type()
		if ty == cty.String || ty == cty.DynamicPseudoType || ty.IsCollectionType() || ty.IsTupleType() || ty.IsObjectType() {
			return cty.Number, nil
		}
		return cty.NilType, function.NewArgErrorf(0, "argument must be a string, a collection or a structure, not %s", ty.FriendlyName())
	},
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		switch ty := args[0].Type(); {
		case ty == cty.String:
			return stdlib.Strlen(args[0])
		case ty.IsObjectType():
			return cty.NumberIntVal(int64(len(ty.AttributeTypes()))).WithMarks(args[0].Marks()), nil
		}
		return stdlib.Length(args[0])
	},
})
