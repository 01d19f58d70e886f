package parquetio

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Arrow Go decodes Arrow IPC metadata (flatbuffers) without checking the
// vector lengths it reads: a corrupt schema that claims four billion fields
// makes it allocate hundreds of GB, a fatal error no recover can catch. The
// checks below walk just the parts of the metadata that Arrow sizes
// allocations from (the schema's fields, their children and key-value
// metadata, and the footer's block lists) and make sure every length fits in
// the bytes actually present. Parquet files carry the same metadata in
// their ARROW:schema key, so both packages need this; it lives here because
// arrowipc imports parquetio.
//
// Table field numbers follow Arrow's format/Schema.fbs, Message.fbs and
// File.fbs.

var errFlatbuffer = errors.New("corrupt arrow metadata")

// Field numbers in the flatbuffer tables.
const (
	fbMessageHeaderType = 1
	fbMessageHeader     = 2
	fbMessageBodyLength = 3
	fbMessageMetadata   = 4
	fbHeaderSchema      = 1 // MessageHeader union: Schema

	fbFooterSchema        = 1
	fbFooterDictionaries  = 2
	fbFooterRecordBatches = 3
	fbFooterMetadata      = 4
	fbBlockSize           = 24

	fbSchemaFields   = 1
	fbSchemaMetadata = 2
	fbSchemaFeatures = 3

	fbFieldName     = 0
	fbFieldChildren = 5
	fbFieldMetadata = 6

	fbKeyValueKey   = 0
	fbKeyValueValue = 1

	fbMaxDepth = 64
)

type fbChecker struct {
	b     []byte
	nodes int // tables visited, capped so a cyclic buffer cannot loop
}

func (c *fbChecker) u32(p int) (int, error) {
	if p < 0 || p+4 > len(c.b) {
		return 0, errFlatbuffer
	}
	return int(binary.LittleEndian.Uint32(c.b[p:])), nil
}

// deref follows the offset stored at p.
func (c *fbChecker) deref(p int) (int, error) {
	u, err := c.u32(p)
	if err != nil {
		return 0, err
	}
	t := p + u
	if t < 0 || t+4 > len(c.b) {
		return 0, errFlatbuffer
	}
	return t, nil
}

// field returns the position of field i of the table at t, or -1 if absent.
func (c *fbChecker) field(t, i int) (int, error) {
	c.nodes++
	if c.nodes > len(c.b) {
		return 0, errFlatbuffer
	}
	so, err := c.u32(t)
	if err != nil {
		return 0, err
	}
	vt := t - int(int32(uint32(so)))
	if vt < 0 || vt+4 > len(c.b) {
		return 0, errFlatbuffer
	}
	vtSize := int(binary.LittleEndian.Uint16(c.b[vt:]))
	slot := vt + 4 + 2*i
	if slot+2 > vt+vtSize {
		return -1, nil
	}
	if slot+2 > len(c.b) {
		return 0, errFlatbuffer
	}
	off := int(binary.LittleEndian.Uint16(c.b[slot:]))
	if off == 0 {
		return -1, nil
	}
	if t+off+4 > len(c.b) {
		return 0, errFlatbuffer
	}
	return t + off, nil
}

// vector checks the vector referenced from p and returns its element start
// and length, or n = 0 if p is -1.
func (c *fbChecker) vector(p, elemSize int) (start, n int, err error) {
	if p < 0 {
		return 0, 0, nil
	}
	v, err := c.deref(p)
	if err != nil {
		return 0, 0, err
	}
	n, err = c.u32(v)
	if err != nil {
		return 0, 0, err
	}
	if n > (len(c.b)-v-4)/elemSize {
		return 0, 0, errFlatbuffer
	}
	return v + 4, n, nil
}

// tables calls f on each table of the vector of tables referenced from p.
func (c *fbChecker) tables(p int, f func(t int) error) error {
	start, n, err := c.vector(p, 4)
	if err != nil {
		return err
	}
	for k := 0; k < n; k++ {
		t, err := c.deref(start + 4*k)
		if err != nil {
			return err
		}
		if err := f(t); err != nil {
			return err
		}
	}
	return nil
}

func (c *fbChecker) keyValues(t, fieldNo int) error {
	p, err := c.field(t, fieldNo)
	if err != nil {
		return err
	}
	return c.tables(p, func(kv int) error {
		for _, f := range []int{fbKeyValueKey, fbKeyValueValue} {
			p, err := c.field(kv, f)
			if err != nil {
				return err
			}
			if _, _, err := c.vector(p, 1); err != nil {
				return err
			}
		}
		return nil
	})
}

func (c *fbChecker) arrowField(t, depth int) error {
	if depth > fbMaxDepth {
		return errFlatbuffer
	}
	p, err := c.field(t, fbFieldName)
	if err != nil {
		return err
	}
	if _, _, err := c.vector(p, 1); err != nil {
		return err
	}
	if err := c.keyValues(t, fbFieldMetadata); err != nil {
		return err
	}
	p, err = c.field(t, fbFieldChildren)
	if err != nil {
		return err
	}
	return c.tables(p, func(ch int) error { return c.arrowField(ch, depth+1) })
}

func (c *fbChecker) schema(t int) error {
	p, err := c.field(t, fbSchemaFields)
	if err != nil {
		return err
	}
	if err := c.tables(p, func(f int) error { return c.arrowField(f, 0) }); err != nil {
		return err
	}
	if err := c.keyValues(t, fbSchemaMetadata); err != nil {
		return err
	}
	p, err = c.field(t, fbSchemaFeatures)
	if err != nil {
		return err
	}
	_, _, err = c.vector(p, 8)
	return err
}

// CheckIPCMessage checks the flatbuffer metadata of one Arrow IPC message
// (as framed in a stream, without the length prefix) before Arrow decodes
// it. See fbcheck.go for why.
func CheckIPCMessage(meta []byte) error {
	c := &fbChecker{b: meta}
	t, err := c.deref(0)
	if err != nil {
		return fmt.Errorf("checking arrow message: %w", err)
	}
	if err := c.keyValues(t, fbMessageMetadata); err != nil {
		return fmt.Errorf("checking arrow message: %w", err)
	}
	p, err := c.field(t, fbMessageHeaderType)
	if err != nil || p < 0 {
		return err
	}
	if c.b[p] != fbHeaderSchema {
		return nil
	}
	if p, err = c.field(t, fbMessageHeader); err != nil || p < 0 {
		if err == nil {
			err = errFlatbuffer
		}
		return fmt.Errorf("checking arrow schema: %w", err)
	}
	s, err := c.deref(p)
	if err == nil {
		err = c.schema(s)
	}
	if err != nil {
		return fmt.Errorf("checking arrow schema: %w", err)
	}
	return nil
}

// CheckIPCFooter checks the flatbuffer footer of an Arrow IPC file (the
// bytes between the last record and the footer length) before Arrow
// decodes it.
func CheckIPCFooter(footer []byte) error {
	c := &fbChecker{b: footer}
	err := func() error {
		t, err := c.deref(0)
		if err != nil {
			return err
		}
		p, err := c.field(t, fbFooterSchema)
		if err != nil {
			return err
		}
		if p < 0 {
			return errFlatbuffer
		}
		s, err := c.deref(p)
		if err != nil {
			return err
		}
		if err := c.schema(s); err != nil {
			return err
		}
		for _, f := range []int{fbFooterDictionaries, fbFooterRecordBatches} {
			p, err := c.field(t, f)
			if err != nil {
				return err
			}
			if _, _, err := c.vector(p, fbBlockSize); err != nil {
				return err
			}
		}
		return c.keyValues(t, fbFooterMetadata)
	}()
	if err != nil {
		return fmt.Errorf("checking arrow file footer: %w", err)
	}
	return nil
}

// IPCBlock is a Block of an Arrow IPC file footer: where one message is.
type IPCBlock struct {
	Offset         int64 // of the message's length prefix
	MetaDataLength int32 // prefix, flatbuffer and padding
	BodyLength     int64
}

// IPCFooterBlocks returns the dictionary and record batch blocks of a
// footer that CheckIPCFooter has accepted, so a reader can hold them
// against the messages the file holds.
func IPCFooterBlocks(footer []byte) (dictionaries, batches []IPCBlock, err error) {
	c := &fbChecker{b: footer}
	t, err := c.deref(0)
	if err != nil {
		return nil, nil, fmt.Errorf("reading arrow file footer: %w", err)
	}
	read := func(field int) ([]IPCBlock, error) {
		p, err := c.field(t, field)
		if err != nil {
			return nil, err
		}
		start, n, err := c.vector(p, fbBlockSize)
		if err != nil {
			return nil, err
		}
		blocks := make([]IPCBlock, n)
		for i := range blocks {
			b := footer[start+fbBlockSize*i:]
			blocks[i] = IPCBlock{
				Offset:         int64(binary.LittleEndian.Uint64(b)),
				MetaDataLength: int32(binary.LittleEndian.Uint32(b[8:])),
				BodyLength:     int64(binary.LittleEndian.Uint64(b[16:])),
			}
		}
		return blocks, nil
	}
	if dictionaries, err = read(fbFooterDictionaries); err != nil {
		return nil, nil, fmt.Errorf("reading arrow file footer: %w", err)
	}
	if batches, err = read(fbFooterRecordBatches); err != nil {
		return nil, nil, fmt.Errorf("reading arrow file footer: %w", err)
	}
	return dictionaries, batches, nil
}
