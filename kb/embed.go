package kb

import "embed"

// dataFS holds the knowledge-base tables (data/*.tsv). go:embed needs a
// package-level variable; an embed.FS is read-only, so this is not mutable
// state.
//
//go:embed data/*.tsv
var dataFS embed.FS
