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

// checkFile checks an IPC file's footer.
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
	return parquetio.CheckIPCFooter(footer)
}

// checkStream walks an IPC stream's messages, checking each one's metadata
// and that its lengths fit in the file, skipping over the bodies. It reads
// only metadata, a small part of a stream.
func checkStream(f *os.File, size int64) error {
	var pos int64
	var hdr [4]byte
	for pos < size {
		if size-pos < 4 {
			return fmt.Errorf("checking arrow stream at byte %d: %w", pos, errCorrupt)
		}
		if _, err := f.ReadAt(hdr[:], pos); err != nil {
			return fmt.Errorf("checking arrow stream: %w", err)
		}
		pos += 4
		n := binary.LittleEndian.Uint32(hdr[:])
		if n == 0xFFFFFFFF { // continuation marker, then the length
			if size-pos < 4 {
				return fmt.Errorf("checking arrow stream at byte %d: %w", pos, errCorrupt)
			}
			if _, err := f.ReadAt(hdr[:], pos); err != nil {
				return fmt.Errorf("checking arrow stream: %w", err)
			}
			pos += 4
			n = binary.LittleEndian.Uint32(hdr[:])
		}
		if n == 0 { // end-of-stream marker
			return nil
		}
		if int64(n) > size-pos || int32(n) < 0 {
			return fmt.Errorf("checking arrow stream: message of %d bytes at byte %d: %w", n, pos, errCorrupt)
		}
		meta := make([]byte, n)
		if _, err := f.ReadAt(meta, pos); err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("checking arrow stream: %w", err)
		}
		pos += int64(n)
		if err := parquetio.CheckIPCMessage(meta); err != nil {
			return err
		}
		body, err := messageBodyLength(meta)
		if err != nil {
			return err
		}
		if body < 0 || body > size-pos {
			return fmt.Errorf("checking arrow stream: body of %d bytes at byte %d: %w", body, pos, errCorrupt)
		}
		pos += body
	}
	return nil
}

// messageBodyLength reads Message.bodyLength (field 3, a long) from a
// message whose flatbuffer CheckIPCMessage has accepted.
func messageBodyLength(meta []byte) (int64, error) {
	bad := fmt.Errorf("checking arrow message: %w", errCorrupt)
	if len(meta) < 4 {
		return 0, bad
	}
	t := int(binary.LittleEndian.Uint32(meta))
	if t < 0 || t+4 > len(meta) {
		return 0, bad
	}
	vt := t - int(int32(binary.LittleEndian.Uint32(meta[t:])))
	if vt < 0 || vt+4 > len(meta) {
		return 0, bad
	}
	vtSize := int(binary.LittleEndian.Uint16(meta[vt:]))
	slot := vt + 4 + 2*3
	if slot+2 > vt+vtSize || slot+2 > len(meta) {
		return 0, nil // absent: no body
	}
	off := int(binary.LittleEndian.Uint16(meta[slot:]))
	if off == 0 {
		return 0, nil
	}
	if t+off+8 > len(meta) {
		return 0, bad
	}
	return int64(binary.LittleEndian.Uint64(meta[t+off:])), nil
}
