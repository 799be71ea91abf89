package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/provision/verify/report"
)

// writePrometheus writes doc as Prometheus metrics: to w, or with out set
// atomically to out (a temporary file in out's directory renamed over it),
// so node_exporter's textfile collector never reads half a file.
func writePrometheus(w io.Writer, out string, doc *report.Document, took time.Duration, k *kb.KB) error {
	o := report.PrometheusOptions{Duration: took, Finished: time.Now()}
	if d, ok := k.NewestFact(); ok {
		o.KnowledgeBaseDate = d.Date
	}
	var b bytes.Buffer
	if err := report.WritePrometheus(&b, doc, o); err != nil {
		return err
	}
	if out == "" {
		_, err := w.Write(b.Bytes())
		return err
	}
	if err := writeNewFile(out, b.Bytes()); err != nil {
		return fmt.Errorf("-out: %w", err)
	}
	return nil
}

// checkOutDir refuses an -out whose directory does not exist before a run
// that may take minutes, as the other formats do by creating the file first.
func checkOutDir(out string) error {
	dir := filepath.Dir(out)
	info, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("-out: %w", err)
	}
	if !info.IsDir() {
		return fmt.Errorf("-out: %s is not a directory", dir)
	}
	return nil
}
