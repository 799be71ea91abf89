package spec

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// MaxNesting is how deeply any construct may nest in HCL text gpuform
// parses: brackets, braces, parentheses, strings and heredocs, template
// interpolations and directives, and chains of operators and splats.
// The HCL parser and evaluator recurse once per level and a few hundred
// thousand levels (300 KB of "!") overflow the Go stack, a crash no recover
// can catch; no real spec comes near this limit.
const MaxNesting = 10000

// CheckNesting reports text nested deeper than MaxNesting, before it is
// handed to the HCL parser. It works on the lexer's tokens, which are read
// without recursion: each opening token is a level, and each unary operator
// or splat in a chain is one more until the list item, argument or line
// ends. Binary operators count as well (their trees are as deep as their
// chains are long): the check only has to be generous, not exact.
func CheckNesting(src []byte, filename string) hcl.Diagnostics {
	toks, _ := hclsyntax.LexConfig(src, filename, hcl.InitialPos)
	// levels holds, per open construct, the token that opened it and the
	// operators chained in its current item.
	type level struct {
		open  hclsyntax.TokenType
		chain int
	}
	levels := []level{{open: hclsyntax.TokenNil}}
	depth := 0 // open constructs plus every level's chain
	for i, t := range toks {
		top := &levels[len(levels)-1]
		switch t.Type {
		case hclsyntax.TokenOBrace, hclsyntax.TokenOBrack, hclsyntax.TokenOParen,
			hclsyntax.TokenTemplateInterp, hclsyntax.TokenTemplateControl,
			hclsyntax.TokenOQuote, hclsyntax.TokenOHeredoc:
			levels = append(levels, level{open: t.Type})
			depth++
		case hclsyntax.TokenCBrace, hclsyntax.TokenCBrack, hclsyntax.TokenCParen,
			hclsyntax.TokenTemplateSeqEnd, hclsyntax.TokenCQuote, hclsyntax.TokenCHeredoc:
			if len(levels) > 1 {
				depth -= 1 + top.chain
				levels = levels[:len(levels)-1]
			}
			// A splat ("[*]") chains on the enclosing level.
			if t.Type == hclsyntax.TokenCBrack && i >= 2 && toks[i-1].Type == hclsyntax.TokenStar && toks[i-2].Type == hclsyntax.TokenOBrack {
				levels[len(levels)-1].chain++
				depth++
			}
		case hclsyntax.TokenIdent:
			// Template directives nest: %{if} … %{endif}, %{for} … %{endfor}.
			if i > 0 && toks[i-1].Type == hclsyntax.TokenTemplateControl {
				switch string(t.Bytes) {
				case "if", "for":
					levels[len(levels)-2].chain++
					depth++
				case "endif", "endfor":
					if p := &levels[len(levels)-2]; p.chain > 0 {
						p.chain--
						depth--
					}
				}
			}
		case hclsyntax.TokenBang, hclsyntax.TokenMinus, hclsyntax.TokenStar, hclsyntax.TokenQuestion,
			// Binary operators build a tree as deep as their chain is long:
			// a million "+1" overflowed the stack of evaluation.
			hclsyntax.TokenPlus, hclsyntax.TokenSlash, hclsyntax.TokenPercent,
			hclsyntax.TokenAnd, hclsyntax.TokenOr, hclsyntax.TokenEqualOp, hclsyntax.TokenNotEqual,
			hclsyntax.TokenLessThan, hclsyntax.TokenLessThanEq, hclsyntax.TokenGreaterThan, hclsyntax.TokenGreaterThanEq:
			top.chain++
			depth++
		case hclsyntax.TokenComma:
			depth -= top.chain
			top.chain = 0
		case hclsyntax.TokenNewline:
			// Newlines end an item at the top level and in blocks and
			// objects; inside brackets and parentheses HCL ignores them.
			if top.open == hclsyntax.TokenNil || top.open == hclsyntax.TokenOBrace {
				depth -= top.chain
				top.chain = 0
			}
		}
		if depth > MaxNesting {
			return hcl.Diagnostics{{
				Severity: hcl.DiagError,
				Summary:  "Nesting too deep",
				Detail:   fmt.Sprintf("The text nests more than %d levels deep here (brackets, strings, templates, operators), which exceeds the limit of %d; gpuform does not parse text nested this deeply.", MaxNesting, MaxNesting),
				Subject:  t.Range.Ptr(),
			}}
		}
	}
	return nil
}
