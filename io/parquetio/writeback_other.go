//go:build !linux

package parquetio

import "os"

// startWriteback does nothing where sync_file_range is not available: the
// commit's sync writes the whole file, as it always did.
func startWriteback(*os.File) {}
