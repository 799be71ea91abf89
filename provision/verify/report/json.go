package report

import (
	"encoding/json"
	"io"
)

// WriteJSON writes d as one indented JSON document.
func WriteJSON(w io.Writer, d *Document) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(d)
}
