//go:build !unix

package main

import "os"

// keepOwner does nothing where files have no Unix owner and group.
func keepOwner(*os.File, os.FileInfo) error { return nil }
