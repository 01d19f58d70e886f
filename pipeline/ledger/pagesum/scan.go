package pagesum

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

// Scan is what ScanFile found in a database file.
type Scan struct {
	PageSize int64
	Pages    int64 // whole pages in the file
	// Summed: the header reserves Reserve bytes per page, so every page
	// carries a sum. When false nothing else below was checked.
	Summed bool
	// Bad lists the page numbers (1-based) whose sum is wrong, the first
	// maxBad of them; BadCount counts them all.
	Bad      []int64
	BadCount int64
	// Tail is how many bytes follow the last whole page: a file cut short
	// in the middle of a page.
	Tail int64
}

const maxBad = 100

// ScanFile reads the database file at path page by page and checks every
// page's sum, without SQLite: what `ac3 doctor` reports. It reads
// sequentially with a small buffer, so memory stays flat however large the
// file. Pages that a write-ahead log beside the file holds newer copies of
// are still checked here: the file's own copy was written whole, with its
// sum, by an earlier checkpoint.
func ScanFile(ctx context.Context, path string) (Scan, error) {
	var s Scan
	f, err := os.Open(path)
	if err != nil {
		return s, fmt.Errorf("checking the pages of %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return s, fmt.Errorf("checking the pages of %s: %w", path, err)
	}
	var h [100]byte
	if _, err := io.ReadFull(f, h[:]); err != nil {
		return s, fmt.Errorf("checking the pages of %s: reading its header: %w", path, err)
	}
	s.PageSize = int64(binary.BigEndian.Uint16(h[16:18]))
	if s.PageSize == 1 {
		s.PageSize = 65536
	}
	if s.PageSize < 512 || s.PageSize > 65536 || s.PageSize&(s.PageSize-1) != 0 {
		return s, fmt.Errorf("checking the pages of %s: its header gives a page size of %d", path, s.PageSize)
	}
	s.Pages, s.Tail = st.Size()/s.PageSize, st.Size()%s.PageSize
	if h[20] != Reserve {
		return s, nil
	}
	s.Summed = true
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return s, fmt.Errorf("checking the pages of %s: %w", path, err)
	}
	r := bufio.NewReaderSize(f, 1<<20)
	page := make([]byte, s.PageSize)
	for pgno := int64(1); pgno <= s.Pages; pgno++ {
		if pgno%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return s, err
			}
		}
		if _, err := io.ReadFull(r, page); err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
				// The file shrank while it was read (a writer's
				// checkpoint truncating it): what is left is checked.
				s.Pages = pgno - 1
				break
			}
			return s, fmt.Errorf("checking the pages of %s: page %d: %w", path, pgno, err)
		}
		if !PageOK(page, pgno) {
			if len(s.Bad) < maxBad {
				s.Bad = append(s.Bad, pgno)
			}
			s.BadCount++
		}
	}
	return s, nil
}
