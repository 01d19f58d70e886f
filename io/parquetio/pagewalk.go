package parquetio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow/go/v17/parquet/file"
	"github.com/apache/arrow/go/v17/parquet/metadata"
	"github.com/apache/thrift/lib/go/thrift"
)

// Why page headers are walked before any page is read.
//
// Arrow's page reader (serializedPageReader.Next) keeps reading page headers
// until the data pages it has seen add up to the value count in the column
// chunk's metadata. If a corrupt chunk holds fewer values than that, it
// reads past the end of the chunk, and there its buffered reader's Peek
// hands back stale bytes from earlier in the buffer instead of nothing.
// Parsed as a page header of a type Arrow does not know, those bytes are
// skipped without consuming anything, and Next spins forever, growing a
// deferred buffer release per turn: a hang that no recover can stop. A page
// header of a known type but without its type's sub-header (a dictionary
// page with no dictionary_page_header) makes Arrow dereference nil.
//
// walkPages follows the chain of page headers of one column chunk the way
// Next does (same start, same length, same stopping rule, same bytes
// consumed per page) and refuses the chunk unless every header parses inside
// the chunk, has its type's sub-header, is of a type Arrow reads, and the
// pages account for the chunk's values before the chunk ends. Arrow's reader
// then never reads beyond the chunk. It reads only headers, so it costs a
// few small reads per page.

// Page types and sizes as in the Parquet format and Arrow's page reader.
const (
	pageData       = 0
	pageDictionary = 2
	pageDataV2     = 3

	firstHeaderWindow = 16 << 10 // Arrow's defaultPageHeaderSize
	maxHeaderWindow   = 4 << 20  // Arrow's defaultMaxPageHeaderSize
	maxDictHeaderSize = 100      // Arrow's PARQUET-816 padding
)

type pageHeader struct {
	typ, uncompressed, compressed int32
	hasType, hasSizes             [2]bool       // type; uncompressed and compressed sizes
	subs                          [9]*subHeader // by field id: 5 data, 7 dictionary, 8 data v2
}

// subHeader holds the fields of a data, dictionary or v2 data page header
// that decide how far Arrow's reader moves.
type subHeader struct {
	numValues            int32
	defLen, repLen       int32
	compressed           bool
	hasNumValues, hasLen bool
}

// walkPages checks column chunk col of rg (see above). size is the file's size.
func walkPages(r io.ReaderAt, size int64, fmd *metadata.FileMetaData, rg *file.RowGroupReader, col int) error {
	cc, err := rg.MetaData().ColumnChunk(col)
	if err != nil {
		return err
	}
	if cc.CryptoMetadata() != nil {
		return nil // Arrow refuses encrypted chunks itself, without reading
	}
	// Where Arrow's GetColumnPageReader starts and how far it reads.
	start := cc.DataPageOffset()
	if cc.HasDictionaryPage() && cc.DictionaryPageOffset() > 0 && start > cc.DictionaryPageOffset() {
		start = cc.DictionaryPageOffset()
	}
	length := cc.TotalCompressedSize()
	if start < 0 || length < 0 || start > size {
		return fmt.Errorf("column chunk at offset %d, length %d, outside the file", start, length)
	}
	if fmd.WriterVersion().LessThan(metadata.Parquet816FixedVersion) {
		length += min(maxDictHeaderSize, max(0, size-(start+length)))
	}
	end := min(start+length, size) // Arrow's stream ends at either
	var seen int64
	for pos := start; seen < cc.NumValues(); {
		if pos >= end {
			return fmt.Errorf("column chunk ends after %d of its %d values", seen, cc.NumValues())
		}
		h, n, err := readPageHeader(r, pos, end)
		if err != nil {
			return fmt.Errorf("page header at offset %d: %w", pos, err)
		}
		pos += n
		if h.uncompressed < 0 || h.compressed < 0 {
			return fmt.Errorf("page at offset %d: negative size", pos)
		}
		var sub *subHeader
		switch h.typ {
		case pageData:
			sub = h.subs[5]
		case pageDictionary:
			sub = h.subs[7]
		case pageDataV2:
			sub = h.subs[8]
		default:
			// Arrow skips other page types without skipping their bodies.
			return fmt.Errorf("page at offset %d: page type %d, which Arrow cannot skip", pos, h.typ)
		}
		if sub == nil || !sub.hasNumValues || sub.numValues < 0 {
			return fmt.Errorf("page at offset %d: page type %d without its header", pos, h.typ)
		}
		// How many bytes of body Arrow reads for this page.
		body := int64(h.compressed)
		if h.typ == pageDataV2 {
			if !sub.hasLen || sub.defLen < 0 || sub.repLen < 0 || int64(sub.defLen)+int64(sub.repLen) > int64(h.compressed) {
				return fmt.Errorf("page at offset %d: bad level lengths", pos)
			}
			if !sub.compressed {
				body = int64(h.uncompressed)
			}
		}
		if h.typ != pageDictionary {
			seen += int64(sub.numValues)
		}
		if body > end-pos {
			return fmt.Errorf("page at offset %d: %d bytes, past the end of the column chunk", pos, body)
		}
		pos += body
	}
	return nil
}

// readPageHeader parses the page header at pos, which must end before end,
// and returns it and its length in bytes. Like Arrow it tries a 16 KiB
// window first and doubles it up to 4 MiB while the header does not parse.
func readPageHeader(r io.ReaderAt, pos, end int64) (pageHeader, int64, error) {
	var last error
	for window := int64(firstHeaderWindow); ; window *= 2 {
		n := min(window, end-pos)
		buf := make([]byte, n)
		if _, err := r.ReadAt(buf, pos); err != nil && !(errors.Is(err, io.EOF)) {
			return pageHeader{}, 0, err
		}
		tbuf := &thrift.TMemoryBuffer{Buffer: bytes.NewBuffer(buf)}
		h, err := parsePageHeader(thrift.NewTCompactProtocolConf(tbuf, &thrift.TConfiguration{}))
		if err == nil {
			return h, n - int64(tbuf.Len()), nil
		}
		last = err
		if n < window || window >= maxHeaderWindow {
			return pageHeader{}, 0, last
		}
	}
}

// parsePageHeader reads a PageHeader struct field by field, skipping what
// it does not need exactly as Arrow's generated reader skips fields it does
// not know or whose wire type is unexpected, so both consume the same bytes.
func parsePageHeader(p thrift.TProtocol) (h pageHeader, err error) {
	ctx := context.Background()
	err = readStruct(ctx, p, func(id int16, typ thrift.TType) (err error) {
		switch {
		case id == 1 && typ == thrift.I32:
			h.typ, err = p.ReadI32(ctx)
			h.hasType[0] = true
		case id == 2 && typ == thrift.I32:
			h.uncompressed, err = p.ReadI32(ctx)
			h.hasSizes[0] = true
		case id == 3 && typ == thrift.I32:
			h.compressed, err = p.ReadI32(ctx)
			h.hasSizes[1] = true
		case (id == 5 || id == 7 || id == 8) && typ == thrift.STRUCT:
			// Arrow keeps the last of each and uses the one for the type.
			h.subs[id], err = parseSubHeader(ctx, p, id == 8)
		default:
			err = p.Skip(ctx, typ)
		}
		return err
	})
	if err != nil {
		return h, err
	}
	if !h.hasType[0] || !h.hasSizes[0] || !h.hasSizes[1] {
		return h, errors.New("required field missing")
	}
	return h, nil
}

func parseSubHeader(ctx context.Context, p thrift.TProtocol, v2 bool) (*subHeader, error) {
	s := &subHeader{compressed: true} // is_compressed defaults to true
	var hasDef, hasRep bool
	err := readStruct(ctx, p, func(id int16, typ thrift.TType) (err error) {
		switch {
		case id == 1 && typ == thrift.I32:
			s.numValues, err = p.ReadI32(ctx)
			s.hasNumValues = true
		case v2 && id == 5 && typ == thrift.I32:
			s.defLen, err = p.ReadI32(ctx)
			hasDef = true
		case v2 && id == 6 && typ == thrift.I32:
			s.repLen, err = p.ReadI32(ctx)
			hasRep = true
		case v2 && id == 7 && typ == thrift.BOOL:
			s.compressed, err = p.ReadBool(ctx)
		default:
			err = p.Skip(ctx, typ)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	s.hasLen = hasDef && hasRep
	return s, nil
}

// readStruct reads a Thrift struct, calling field to read or skip each of
// its fields.
func readStruct(ctx context.Context, p thrift.TProtocol, field func(id int16, typ thrift.TType) error) error {
	if _, err := p.ReadStructBegin(ctx); err != nil {
		return err
	}
	for {
		_, typ, id, err := p.ReadFieldBegin(ctx)
		if err != nil {
			return err
		}
		if typ == thrift.STOP {
			break
		}
		if err := field(id, typ); err != nil {
			return err
		}
		if err := p.ReadFieldEnd(ctx); err != nil {
			return err
		}
	}
	return p.ReadStructEnd(ctx)
}
