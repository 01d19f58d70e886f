//go:build !cgo

package pagesum

import "errors"

// VFS is the shim's name, for a DSN's vfs parameter.
const VFS = "ac3sum"

// Reserve is how many bytes at the end of each page hold the sum.
const Reserve = 8

// PadParam: see the cgo build.
const PadParam = "ac3_pad"

// VerifyParam: see the cgo build.
const VerifyParam = "ac3_verify"

// ExtendedCode is SQLite's extended result code for a page that fails its
// checksum (SQLITE_IOERR_DATA).
const ExtendedCode = 10 | 32<<8

// Registered fails without cgo: there is no SQLite to register with.
func Registered() error { return errors.New("page checksums need cgo (SQLite is a C library)") }

// PageOK cannot check without cgo.
func PageOK([]byte, int64) bool { return false }

// Seal cannot seal without cgo.
func Seal([]byte, int64) {}

// Faulted has nothing to report without cgo.
func Faulted(string) bool { return false }
