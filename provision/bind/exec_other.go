//go:build !linux

package bind

import "errors"

// Exec is the Linux launcher; other systems have neither the NUMA policy
// nor the GPUs it binds.
func Exec(*Launch) error {
	return errors.New("gpuform bind runs on Linux GPU nodes only")
}
