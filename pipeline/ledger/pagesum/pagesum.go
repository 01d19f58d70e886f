//go:build cgo

// Package pagesum keeps a checksum on every page of a run file and checks it
// on every read, so a flipped byte anywhere in the file is an error the
// moment SQLite reads that page, never a wrong row.
//
// It is a VFS shim written in C (vfs.c) that registers itself as SQLite's
// default VFS when this package is initialised, on top of the VFS that was
// the default. It acts only on database files whose header reserves exactly
// Reserve bytes at the end of each page, where it keeps the sum; any other
// database passes through untouched. A failed check is SQLite's
// SQLITE_IOERR_DATA (extended code 8202) from whatever query read the page.
//
// The ledger gives every run file those reserved bytes (see
// ledger.ensureChecksums) and calls ScanFile from `ac3 doctor`, which checks
// every page without SQLite.
package pagesum

/*
#include <stdint.h>
#include <stdlib.h>
int ac3_pagesum_register(void);
int ac3_pagesum_faulted(const char *name);
int ac3_pagesum_ok(const unsigned char *page, int size, uint64_t pgno);
uint64_t ac3_pagesum(const unsigned char *p, int n, uint64_t pgno);
extern const char ac3_pagesum_vfs_name[];
static const char *ac3_pagesum_name(void) { return ac3_pagesum_vfs_name; }
*/
import "C"

import (
	"encoding/binary"
	"errors"
	"path/filepath"
	"unsafe"

	_ "github.com/mattn/go-sqlite3" // links the SQLite library the shim sits on
)

// VFS is the shim's name, for a DSN's vfs parameter.
const VFS = "ac3sum"

// Reserve is how many bytes at the end of each page hold the sum: the value
// a run file's header must carry at offset 20.
const Reserve = 8

// PadParam is a URI parameter for opening a file read-only to salvage it:
// with PadParam=1 a file shorter than its header says is read as if it had
// all its pages, the missing ones empty (SQLite otherwise refuses the whole
// file as malformed before any row can be read).
const PadParam = "ac3_pad"

// VerifyParam is a URI parameter that, set to 0, keeps the sums of pages
// written but does not check those read: for measuring what the checks
// cost. Nothing in ac3 reads a run file that way.
const VerifyParam = "ac3_verify"

// ExtendedCode is SQLite's extended result code for a page that fails its
// checksum (SQLITE_IOERR_DATA).
const ExtendedCode = 10 | 32<<8

// registerErr is the outcome of registering the shim, set once when the
// package is initialised (SQLite's VFS list is process-wide) and read only.
var registerErr = register()

func register() error {
	if C.GoString(C.ac3_pagesum_name()) != VFS {
		return errors.New("page checksums: the shim's name does not match VFS")
	}
	if rc := C.ac3_pagesum_register(); rc != 0 {
		return errors.New("page checksums: SQLite refused to register the checksum VFS")
	}
	return nil
}

// Registered reports whether the shim is in place; an error means run files
// would be read without their checks, so the ledger refuses to open them.
func Registered() error { return registerErr }

// PageOK reports whether page (one whole page, its sum in its last Reserve
// bytes) carries the right sum for page number pgno (1-based).
func PageOK(page []byte, pgno int64) bool {
	if len(page) < 512 {
		return false
	}
	return C.ac3_pagesum_ok((*C.uchar)(unsafe.Pointer(&page[0])), C.int(len(page)), C.uint64_t(pgno)) != 0
}

// Faulted reports whether, in this process, a page of the database file at
// path failed its sum. SQLite reports most such faults as SQLITE_IOERR_DATA,
// but a fault met while it reads the schema to prepare a statement reaches
// the caller as a plain SQLITE_IOERR; this tells the two apart from other
// I/O errors. path is compared after making it absolute and resolving
// symbolic links, as SQLite names the files it opens.
func Faulted(path string) bool {
	full, err := filepath.Abs(path)
	if err != nil {
		return false
	}
	if resolved, err := filepath.EvalSymlinks(full); err == nil {
		full = resolved
	}
	cs := C.CString(full)
	defer C.free(unsafe.Pointer(cs))
	return C.ac3_pagesum_faulted(cs) != 0
}

// Seal writes the right sum for page number pgno into page's last Reserve
// bytes, as the shim does when SQLite writes the page. Tests use it to
// build pages; the ledger never writes pages itself.
func Seal(page []byte, pgno int64) {
	n := len(page) - Reserve
	sum := C.ac3_pagesum((*C.uchar)(unsafe.Pointer(&page[0])), C.int(n), C.uint64_t(pgno))
	binary.LittleEndian.PutUint64(page[n:], uint64(sum))
}
