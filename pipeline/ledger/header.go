package ledger

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/ac3/ac3/pipeline/ledger/pagesum"
)

// sqliteMagic opens every SQLite database file.
var sqliteMagic = []byte("SQLite format 3\x00")

// checkHeader is the check every Open makes before SQLite touches the file:
// it reads the 100-byte database header and fails with a *DamagedError when
// the file cannot be a sound SQLite database. A missing or empty file is a
// new run and passes.
//
// When exclusive (the caller holds the writer lock) and no write-ahead log
// is waiting to be applied, it also compares the file's size with the page
// count in its header, which finds a file cut short (an interrupted copy, a
// disk that filled during one). Without the lock a live writer's checkpoint
// may be growing the file, so that comparison would race.
//
// It costs one small read. It cannot see damage in the middle of the file:
// finding that means reading every page (Check), which the commands do not
// pay on every start.
func checkHeader(path string, exclusive bool) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("opening run %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("opening run %s: %w", path, err)
	}
	if st.Size() == 0 {
		return nil
	}
	damaged := func(format string, args ...any) error {
		return &DamagedError{Path: path, Err: fmt.Errorf(format, args...)}
	}
	var h [100]byte
	if _, err := io.ReadFull(f, h[:]); err != nil {
		return damaged("it is %d bytes long, shorter than an SQLite header", st.Size())
	}
	if !bytes.Equal(h[:16], sqliteMagic) {
		return damaged("it does not begin with the SQLite header (is it a run file?)")
	}
	pageSize := int64(binary.BigEndian.Uint16(h[16:18]))
	if pageSize == 1 {
		pageSize = 65536
	}
	if pageSize < 512 || pageSize > 65536 || pageSize&(pageSize-1) != 0 {
		return damaged("its header gives a page size of %d", pageSize)
	}
	// Fixed by the file format: maximum, minimum and leaf payload fractions.
	if h[21] != 64 || h[22] != 32 || h[23] != 32 {
		return damaged("its header has invalid payload fractions %d/%d/%d", h[21], h[22], h[23])
	}
	// The reserve byte switches the page checksums on; the application id
	// says the file was given them. A changed reserve byte would switch the
	// checks off unseen, so the two must agree.
	reserve, marked := summedHeader(h[:])
	if marked && reserve != pagesum.Reserve {
		return damaged("its header marks it as a run file with page checksums but reserves %d bytes per page for them, not %d", reserve, pagesum.Reserve)
	}
	// SQLite acts on the header (the journal mode, the page count) before
	// it reads the first page whole, so that page's sum is checked here.
	if marked {
		if err := checkFirstPage(f, pageSize); err != nil {
			return damaged("%v", err)
		}
	}
	if !exclusive {
		return nil
	}
	if wal, err := os.Stat(path + "-wal"); err == nil && wal.Size() > 0 {
		return nil // pages may still live in the log; SQLite reconciles them
	}
	if st.Size()%pageSize != 0 {
		return damaged("it is %d bytes long, not a whole number of %d-byte pages: it was cut short", st.Size(), pageSize)
	}
	// The header's page count is only meaningful when the "version valid
	// for" number matches the change counter (older writers left it stale).
	pages := int64(binary.BigEndian.Uint32(h[28:32]))
	if pages > 0 && binary.BigEndian.Uint32(h[24:28]) == binary.BigEndian.Uint32(h[92:96]) && st.Size() < pages*pageSize {
		return damaged("it is %d bytes long but its header counts %d pages of %d bytes: it was cut short", st.Size(), pages, pageSize)
	}
	return nil
}

// checkFirstPage checks the sum of page 1 of a run file that keeps them. A
// writer's checkpoint may be rewriting that page while it is read, so a
// mismatch is read again before it counts as damage.
func checkFirstPage(f *os.File, pageSize int64) error {
	page := make([]byte, pageSize)
	for attempt := 0; ; attempt++ {
		n, err := f.ReadAt(page, 0)
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("reading its first page: %w", err)
		}
		if int64(n) < pageSize {
			return fmt.Errorf("it is %d bytes long, shorter than its first page (%d bytes)", n, pageSize)
		}
		if pagesum.PageOK(page, 1) {
			return nil
		}
		if attempt == 2 {
			return fmt.Errorf("its first page (the header and the table of tables) no longer matches its checksum: its bytes changed after ac3 wrote them")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
