package lic

import (
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/ac3/ac3/io/jsonl"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/record"
)

// Format is the value of Conversation.Format for LiC records.
const Format = "lic"

// NewReader returns a reader of the LiC records in r, a JSON array or JSON
// Lines; name goes into each record's Source. Closing it does not close r.
func NewReader(r io.Reader, name string, opts ...jsonl.Option) record.Reader {
	return jsonl.NewRecordReader(r, name, Decode, opts...)
}

var _ jsonl.DecodeFunc = Decode

type shard struct {
	id   int64
	text string
	docs []int64
}

// Decode maps one LiC record to a conversation, or quarantines it. It is
// safe for concurrent use and keeps no reference to raw.
//
// Shards are sorted by shard_id. A shard with text becomes one user message.
// The summary task publishes shards with empty text that point at documents
// (doc_idxs, matched against documents[].document_index); such a shard's
// message is built from those documents, the first one led by the record's
// query. Shards left empty are skipped.
//
// Quarantine reasons: InvalidUTF8, MalformedJSON, TruncatedLine, BadField,
// MissingConversation (no shards), PythonReprString, NoUserMessage (no
// shard with any text).
func Decode(raw []byte, src conv.Source) record.Record {
	if bad, ok := jsonl.CheckUTF8(raw, src); !ok {
		return bad
	}
	var (
		c         jsonl.Cursor
		prob      *jsonl.Problem
		meta      jsonl.Members
		id, query string
		shards    []shard
		docs      map[int64]string
		hasShards bool
	)
	c.Reset(raw)
	if c.Kind() != jsonl.KindObject {
		return jsonl.NotObject(raw, src, &c)
	}
	err := c.Object(func(key []byte, start int) error {
		var err error
		switch string(key) {
		case "shards":
			shards, hasShards, err = readShards(&c, &prob)
			return err
		case "task_id":
			id, err = jsonl.ID(&c, "task_id", &prob)
		case "query":
			if c.Kind() == jsonl.KindString {
				query, err = c.Str()
			} else {
				err = c.Skip()
			}
		case "documents":
			docs, err = readDocs(&c)
		default:
			err = c.Skip()
		}
		if err == nil {
			meta.Add(start, c.Offset())
		}
		return err
	})
	if bad, ok := jsonl.Finish(raw, src, &c, err, prob, "shards", hasShards); !ok {
		return bad
	}
	d := conv.Conversation{Source: src, Format: Format, ID: id}
	sort.SliceStable(shards, func(i, j int) bool { return shards[i].id < shards[j].id })
	first := true
	for _, s := range shards {
		text := s.text
		if strings.TrimSpace(text) == "" && len(s.docs) > 0 && docs != nil {
			text = fromDocs(s.docs, docs, first, query)
		}
		if strings.TrimSpace(text) == "" {
			continue
		}
		first = false
		d.Messages = append(d.Messages, conv.Message{Role: conv.User, Content: text})
	}
	if len(d.Messages) == 0 {
		return jsonl.Quarantine(raw, src, record.NoUserMessage, "no shard has any text")
	}
	if d.ID == "" {
		d.ID = jsonl.ContentID(&d)
	}
	d.Meta = meta.Object(raw)
	return record.Record{Conv: &d}
}

// fromDocs writes the text of a document-only shard.
func fromDocs(idxs []int64, docs map[int64]string, first bool, query string) string {
	var sb strings.Builder
	if first && query != "" {
		sb.WriteString(query)
	}
	for _, i := range idxs {
		t, ok := docs[i]
		if !ok {
			continue
		}
		if sb.Len() > 0 {
			sb.WriteString("\n\n")
		}
		sb.WriteString("Document ")
		sb.WriteString(strconv.FormatInt(i, 10))
		sb.WriteString(":\n")
		sb.WriteString(t)
	}
	return sb.String()
}

func readShards(c *jsonl.Cursor, prob **jsonl.Problem) ([]shard, bool, error) {
	var out []shard
	has, err := jsonl.ObjectArray(c, "shards", "shard", prob, func(i int) error {
		s := shard{id: int64(i)}
		err := c.Object(func(key []byte, _ int) error {
			switch string(key) {
			case "shard_id":
				n, ok, err := integer(c)
				if !ok {
					jsonl.Note(prob, record.BadField, "shard %d shard_id is not an integer", i)
				}
				s.id = n
				return err
			case "shard":
				var err error
				s.text, err = jsonl.OptString(c, "shard", prob)
				return err
			case "doc_idxs":
				if c.Kind() != jsonl.KindArray {
					return c.Skip()
				}
				return c.Array(func(int) error {
					n, ok, err := integer(c)
					if ok {
						s.docs = append(s.docs, n)
					}
					return err
				})
			}
			return c.Skip()
		})
		out = append(out, s)
		return err
	})
	return out, has, err
}

// readDocs indexes the summary task's documents by document_index. It is
// lenient: documents that do not fit are ignored (they stay in Meta).
func readDocs(c *jsonl.Cursor) (map[int64]string, error) {
	if c.Kind() != jsonl.KindArray {
		return nil, c.Skip()
	}
	docs := map[int64]string{}
	err := c.Array(func(int) error {
		if c.Kind() != jsonl.KindObject {
			return c.Skip()
		}
		var (
			idx   int64
			text  string
			okIdx bool
		)
		err := c.Object(func(key []byte, _ int) error {
			var err error
			switch string(key) {
			case "document_index":
				idx, okIdx, err = integer(c)
			case "document_text":
				if c.Kind() == jsonl.KindString {
					text, err = c.Str()
				} else {
					err = c.Skip()
				}
			default:
				err = c.Skip()
			}
			return err
		})
		if okIdx {
			docs[idx] = text
		}
		return err
	})
	return docs, err
}

// integer reads a JSON number that is a whole number.
func integer(c *jsonl.Cursor) (int64, bool, error) {
	if c.Kind() != jsonl.KindNumber {
		return 0, false, c.Skip()
	}
	raw, err := c.Raw()
	if err != nil {
		return 0, false, err
	}
	n, perr := strconv.ParseInt(string(raw), 10, 64)
	if perr != nil {
		f, ferr := strconv.ParseFloat(string(raw), 64)
		if ferr != nil || f != float64(int64(f)) {
			return 0, false, nil
		}
		n = int64(f)
	}
	return n, true, nil
}
