// Package tomledit sets and removes chosen keys of a TOML document and keeps
// every other byte of it: comments, blank lines, indentation, key order,
// quoting, the other tables. It reads the document with go-toml's
// unstable.Parser, which gives the byte range of every key and value, and
// splices only the lines of the keys it is asked to change; it never
// re-renders the document.
//
// tomledit is not a TOML encoder or decoder: values are given and read as
// TOML text, and a document is only ever changed by the edits asked for. It
// refuses an edit it cannot make without rewriting text it does not own (a
// key held in an inline table, a table made of array elements) rather than
// guess.
package tomledit
