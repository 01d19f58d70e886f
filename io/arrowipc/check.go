package arrowipc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/ac3/ac3/io/parquetio"
)

// Arrow Go trusts the lengths in IPC metadata and allocates whatever they
// claim, which for a corrupt file can be more memory than the machine has: a
// fatal error, not a panic. These checks run before Arrow sees the file and
// refuse metadata whose lengths do not fit in the file (see
// parquetio.CheckIPCMessage for the flatbuffer side).

var errCorrupt = errors.New("corrupt arrow data")

// Message header types (the MessageHeader union in Message.fbs).
const (
	headerSchema          = 1
	headerDictionaryBatch = 2
	headerRecordBatch     = 3
)

// message is one IPC message as found by walking a file or stream.
type message struct {
	offset int64 // of its length prefix, where a footer block points
	meta   int64 // prefix, flatbuffer and padding, as a footer block counts it
	body   int64
	kind   byte // headerSchema, headerDictionaryBatch, headerRecordBatch
}

// checkFile checks an IPC file's footer, and that the record batches and
// dictionaries it lists are exactly the messages the file holds, in order.
// Arrow reads a file by its footer only, so a footer that lost a batch
// would read as a shorter file, and one that points into the middle of a
// message as whatever bytes are there.
func checkFile(f *os.File, size int64) error {
	const tail = 10 // int32 footer length + "ARROW1"
	if size < int64(len(fileMagic))+2+tail {
		return fmt.Errorf("checking arrow file: too short: %w", errCorrupt)
	}
	var t [tail]byte
	if _, err := f.ReadAt(t[:], size-tail); err != nil {
		return fmt.Errorf("checking arrow file: %w", err)
	}
	if string(t[4:]) != fileMagic {
		return fmt.Errorf("checking arrow file: no closing magic (truncated?): %w", errCorrupt)
	}
	n := int64(int32(binary.LittleEndian.Uint32(t[:4])))
	if n <= 0 || n > size-tail-8 {
		return fmt.Errorf("checking arrow file: footer length %d: %w", n, errCorrupt)
	}
	footer := make([]byte, n)
	if _, err := f.ReadAt(footer, size-tail-n); err != nil {
		return fmt.Errorf("checking arrow file: %w", err)
	}
	if err := parquetio.CheckIPCFooter(footer); err != nil {
		return err
	}
	dicts, batches, err := parquetio.IPCFooterBlocks(footer)
	if err != nil {
		return err
	}
	// The messages run from after the magic and its padding to the footer,
	// with an end-of-stream marker before the footer or not (Arrow C++
	// writes one, Arrow Go does not).
	msgs, _, err := walkMessages(f, 8, size-tail-n, "file")
	if err != nil {
		return err
	}
	if err := sameBlocks("dictionary batch", dicts, msgs, headerDictionaryBatch); err != nil {
		return err
	}
	return sameBlocks("record batch", batches, msgs, headerRecordBatch)
}

// sameBlocks checks that the footer's blocks of one kind are the file's
// messages of that kind.
func sameBlocks(what string, blocks []parquetio.IPCBlock, msgs []message, kind byte) error {
	var found []message
	for _, m := range msgs {
		if m.kind == kind {
			found = append(found, m)
		}
	}
	if len(blocks) != len(found) {
		return fmt.Errorf("checking arrow file: its footer lists %d %ses, the file holds %d: %w", len(blocks), what, len(found), errCorrupt)
	}
	for i, b := range blocks {
		m := found[i]
		if b.Offset != m.offset || int64(b.MetaDataLength) != m.meta || b.BodyLength != m.body {
			return fmt.Errorf("checking arrow file: %s %d: the footer has it at byte %d (%d+%d bytes), the file at byte %d (%d+%d bytes): %w",
				what, i, b.Offset, b.MetaDataLength, b.BodyLength, m.offset, m.meta, m.body, errCorrupt)
		}
	}
	return nil
}

// checkStream walks an IPC stream's messages, checking each one's metadata
// and that its lengths fit in the file, skipping over the bodies. It reads
// only metadata, a small part of a stream. The stream must end with its
// end-of-stream marker, and nothing may follow it: a stream cut between two
// messages is otherwise indistinguishable from a whole one, and a marker
// made by corruption would hide the batches after it.
func checkStream(f *os.File, size int64) error {
	_, eos, err := walkMessages(f, 0, size, "stream")
	if err != nil {
		return err
	}
	if eos < 0 {
		return fmt.Errorf("checking arrow stream: it ends without its end-of-stream marker (cut short?): %w", errCorrupt)
	}
	return nil
}

// walkMessages reads the messages from start until end, or until an
// end-of-stream marker that must then be the last thing before end; it
// returns them and the marker's offset (-1 if there is none). It checks each
// message's metadata (parquetio.CheckIPCMessage) and that its lengths fit.
func walkMessages(f io.ReaderAt, start, end int64, what string) (msgs []message, eos int64, err error) {
	pos := start
	var hdr [4]byte
	for pos < end {
		at := pos
		if end-pos < 4 {
			return nil, -1, fmt.Errorf("checking arrow %s at byte %d: %w", what, pos, errCorrupt)
		}
		if _, err := f.ReadAt(hdr[:], pos); err != nil {
			return nil, -1, fmt.Errorf("checking arrow %s: %w", what, err)
		}
		pos += 4
		n := binary.LittleEndian.Uint32(hdr[:])
		if n == 0xFFFFFFFF { // continuation marker, then the length
			if end-pos < 4 {
				return nil, -1, fmt.Errorf("checking arrow %s at byte %d: %w", what, pos, errCorrupt)
			}
			if _, err := f.ReadAt(hdr[:], pos); err != nil {
				return nil, -1, fmt.Errorf("checking arrow %s: %w", what, err)
			}
			pos += 4
			n = binary.LittleEndian.Uint32(hdr[:])
		}
		if n == 0 { // end-of-stream marker
			if pos != end {
				return nil, -1, fmt.Errorf("checking arrow %s: %d bytes after the end-of-stream marker at byte %d: %w", what, end-pos, at, errCorrupt)
			}
			return msgs, at, nil
		}
		if int64(n) > end-pos || int32(n) < 0 {
			return nil, -1, fmt.Errorf("checking arrow %s: message of %d bytes at byte %d: %w", what, n, pos, errCorrupt)
		}
		meta := make([]byte, n)
		if _, err := f.ReadAt(meta, pos); err != nil && !errors.Is(err, io.EOF) {
			return nil, -1, fmt.Errorf("checking arrow %s: %w", what, err)
		}
		pos += int64(n)
		if err := parquetio.CheckIPCMessage(meta); err != nil {
			return nil, -1, err
		}
		kind, body, err := messageHeader(meta)
		if err != nil {
			return nil, -1, err
		}
		if body < 0 || body > end-pos {
			return nil, -1, fmt.Errorf("checking arrow %s: body of %d bytes at byte %d: %w", what, body, pos, errCorrupt)
		}
		pos += body
		msgs = append(msgs, message{offset: at, meta: pos - body - at, body: body, kind: kind})
	}
	return msgs, -1, nil
}

// messageHeader reads Message.header_type (field 1, a byte) and
// Message.bodyLength (field 3, a long) from a message whose flatbuffer
// CheckIPCMessage has accepted.
func messageHeader(meta []byte) (kind byte, body int64, err error) {
	bad := fmt.Errorf("checking arrow message: %w", errCorrupt)
	if len(meta) < 4 {
		return 0, 0, bad
	}
	t := int(binary.LittleEndian.Uint32(meta))
	if t < 0 || t+4 > len(meta) {
		return 0, 0, bad
	}
	vt := t - int(int32(binary.LittleEndian.Uint32(meta[t:])))
	if vt < 0 || vt+4 > len(meta) {
		return 0, 0, bad
	}
	vtSize := int(binary.LittleEndian.Uint16(meta[vt:]))
	// field returns the offset of field i in the table, 0 when absent.
	field := func(i, size int) (int, error) {
		slot := vt + 4 + 2*i
		if slot+2 > vt+vtSize || slot+2 > len(meta) {
			return 0, nil
		}
		off := int(binary.LittleEndian.Uint16(meta[slot:]))
		if off != 0 && t+off+size > len(meta) {
			return 0, bad
		}
		return off, nil
	}
	off, err := field(1, 1)
	if err != nil {
		return 0, 0, err
	}
	if off != 0 {
		kind = meta[t+off]
	}
	if off, err = field(3, 8); err != nil || off == 0 {
		return kind, 0, err // absent: no body
	}
	return kind, int64(binary.LittleEndian.Uint64(meta[t+off:])), nil
}
