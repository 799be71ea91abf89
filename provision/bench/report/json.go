package report

import (
	"encoding/json"
	"io"

	"github.com/gpuform/gpuform/provision/bench"
)

// WriteJSON writes r as one indented JSON document; its format_version is
// jsonformat.Version like every other document gpuform writes.
func WriteJSON(w io.Writer, r *bench.Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
