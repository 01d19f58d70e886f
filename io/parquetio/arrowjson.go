package parquetio

import (
	"encoding/base64"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
)

// This file renders single Arrow values as JSON. It exists because WildChat's
// extra columns (moderation scores, headers, timestamps) must end up in
// Conversation.Meta as a JSON object, and because a quarantined row needs a
// textual excerpt. Arrow's own GetOneForMarshal builds a map per struct, so
// it allocates per field and loses the column order; this walks the arrays
// directly and appends to one reused buffer.

// appendJSONValue appends value i of arr as JSON to b.
func appendJSONValue(b []byte, arr arrow.Array, i int) []byte {
	if arr.IsNull(i) {
		return append(b, "null"...)
	}
	switch a := arr.(type) {
	case *array.String:
		return appendJSONString(b, a.Value(i))
	case *array.LargeString:
		return appendJSONString(b, a.Value(i))
	case *array.StringView:
		return appendJSONString(b, a.Value(i))
	case *array.Binary:
		return appendJSONBytes(b, a.Value(i))
	case *array.LargeBinary:
		return appendJSONBytes(b, a.Value(i))
	case *array.BinaryView:
		return appendJSONBytes(b, a.Value(i))
	case *array.FixedSizeBinary:
		return appendJSONBytes(b, a.Value(i))
	case *array.Boolean:
		return strconv.AppendBool(b, a.Value(i))
	case *array.Int8:
		return strconv.AppendInt(b, int64(a.Value(i)), 10)
	case *array.Int16:
		return strconv.AppendInt(b, int64(a.Value(i)), 10)
	case *array.Int32:
		return strconv.AppendInt(b, int64(a.Value(i)), 10)
	case *array.Int64:
		return strconv.AppendInt(b, a.Value(i), 10)
	case *array.Uint8:
		return strconv.AppendUint(b, uint64(a.Value(i)), 10)
	case *array.Uint16:
		return strconv.AppendUint(b, uint64(a.Value(i)), 10)
	case *array.Uint32:
		return strconv.AppendUint(b, uint64(a.Value(i)), 10)
	case *array.Uint64:
		return strconv.AppendUint(b, a.Value(i), 10)
	case *array.Float16:
		return appendJSONFloat(b, float64(a.Value(i).Float32()), 32)
	case *array.Float32:
		return appendJSONFloat(b, float64(a.Value(i)), 32)
	case *array.Float64:
		return appendJSONFloat(b, a.Value(i), 64)
	case *array.Timestamp:
		return appendJSONTimestamp(b, a, i)
	case *array.Date32:
		return appendJSONString(b, a.Value(i).ToTime().Format(time.DateOnly))
	case *array.Date64:
		return appendJSONString(b, a.Value(i).ToTime().Format(time.DateOnly))
	case *array.Struct:
		st := a.DataType().(*arrow.StructType)
		b = append(b, '{')
		for f := 0; f < a.NumField(); f++ {
			if f > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, st.Field(f).Name)
			b = append(b, ':')
			b = appendJSONValue(b, a.Field(f), i)
		}
		return append(b, '}')
	case *array.Map:
		return appendJSONMap(b, a, i)
	case array.ListLike:
		start, end := a.ValueOffsets(i)
		vals := a.ListValues()
		b = append(b, '[')
		for j := start; j < end; j++ {
			if j > start {
				b = append(b, ',')
			}
			b = appendJSONValue(b, vals, int(j))
		}
		return append(b, ']')
	case *array.Dictionary:
		return appendJSONValue(b, a.Dictionary(), a.GetValueIndex(i))
	default:
		// Decimals, intervals, unions and the like do not occur in the
		// formats we read; their string form is kept rather than dropped.
		return appendJSONString(b, arr.ValueStr(i))
	}
}

// appendJSONMap renders a map with string keys as an object, and any other
// map as a list of {"key", "value"} pairs, since JSON keys must be strings.
func appendJSONMap(b []byte, a *array.Map, i int) []byte {
	start, end := a.ValueOffsets(i)
	keys, items := a.Keys(), a.Items()
	_, stringKeys := keys.(*array.String)
	if stringKeys {
		b = append(b, '{')
	} else {
		b = append(b, '[')
	}
	for j := int(start); j < int(end); j++ {
		if j > int(start) {
			b = append(b, ',')
		}
		if stringKeys {
			b = appendJSONString(b, keys.(*array.String).Value(j))
			b = append(b, ':')
			b = appendJSONValue(b, items, j)
			continue
		}
		b = append(b, `{"key":`...)
		b = appendJSONValue(b, keys, j)
		b = append(b, `,"value":`...)
		b = appendJSONValue(b, items, j)
		b = append(b, '}')
	}
	if stringKeys {
		return append(b, '}')
	}
	return append(b, ']')
}

// timestampLayout matches how WildChat's JSONL exports print the top-level
// timestamp (pandas' str of a tz-aware Timestamp), so Meta looks the same
// whichever file format a conversation came from.
const timestampLayout = "2006-01-02 15:04:05.999999999-07:00"

func appendJSONTimestamp(b []byte, a *array.Timestamp, i int) []byte {
	tt := a.DataType().(*arrow.TimestampType)
	loc, err := tt.GetZone()
	if err != nil {
		loc = time.UTC
	}
	t := a.Value(i).ToTime(tt.Unit).In(loc)
	b = append(b, '"')
	b = t.AppendFormat(b, timestampLayout)
	return append(b, '"')
}

func appendJSONFloat(b []byte, f float64, bits int) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, bits)
}

func appendJSONBytes(b []byte, v []byte) []byte {
	b = append(b, '"')
	b = base64.StdEncoding.AppendEncode(b, v)
	return append(b, '"')
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string. Bytes that are not UTF-8
// become U+FFFD, as encoding/json does, so the result is always valid JSON.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, "\ufffd"...)
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
