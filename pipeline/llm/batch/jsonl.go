package batch

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/ac3/ac3/pipeline/llm"
)

// ChatURL is the url of chat-completions input lines, and EmbedURL of
// embeddings lines (the embedder role's endpoint): a batch carries one or
// the other, as its endpoint serves one kind of model.
const (
	ChatURL  = "/v1/chat/completions"
	EmbedURL = llm.EmbedURL
)

// linePrefix and lineSuffix frame an input line around its custom_id and
// body.
const (
	linePrefix = `{"custom_id":`
	lineMiddle = `,"method":"POST","url":"` + ChatURL + `","body":`
	lineSuffix = "}\n"
)

// AppendInputLine appends one batch input line (OpenAI batch JSONL, which
// vLLM's run_batch reads too) for the request with key and chat-completions
// body to dst. body must be one JSON object.
func AppendInputLine(dst []byte, key string, body []byte) ([]byte, error) {
	return AppendInputLineURL(dst, ChatURL, key, body)
}

// AppendInputLineURL is AppendInputLine for a request to url (ChatURL or
// EmbedURL).
func AppendInputLineURL(dst []byte, url, key string, body []byte) ([]byte, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' || !json.Valid(body) {
		return dst, fmt.Errorf("request %s: its body is not a JSON object", key)
	}
	if bytes.IndexByte(body, '\n') >= 0 {
		var b bytes.Buffer
		if err := json.Compact(&b, body); err != nil {
			return dst, fmt.Errorf("request %s: %w", key, err)
		}
		body = b.Bytes()
	}
	dst = append(dst, linePrefix...)
	dst = strconv.AppendQuote(dst, key)
	if url == ChatURL {
		dst = append(dst, lineMiddle...)
	} else {
		dst = append(dst, `,"method":"POST","url":`...)
		dst = strconv.AppendQuote(dst, url)
		dst = append(dst, `,"body":`...)
	}
	dst = append(dst, body...)
	return append(dst, lineSuffix...), nil
}

// LineSize is the size in bytes of the chat input line of a request whose
// key needs no escaping (cache keys are hex) and whose compact body is
// bodyLen bytes long; an embeddings line (a shorter url) is smaller.
func LineSize(key string, bodyLen int) int64 {
	return int64(len(linePrefix) + len(key) + 2 + len(lineMiddle) + bodyLen + len(lineSuffix))
}

// InputLine is one line of a batch input file.
type InputLine struct {
	CustomID string          `json:"custom_id"`
	Method   string          `json:"method"`
	URL      string          `json:"url"`
	Body     json.RawMessage `json:"body"`
}

// Result is one line of a batch output or error file: the answer to the
// request named CustomID (Status 200 and the completion in Body), an
// error answer (another Status, the error body in Body), or a request that
// was never answered (Status 0; Code and Message say why, e.g.
// batch_expired).
type Result struct {
	CustomID string
	Status   int
	Body     json.RawMessage
	Code     string
	Message  string
}

// OK reports whether the line carries an answer.
func (r Result) OK() bool { return r.Status == 200 }

// Reason says in one line why the request was not answered.
func (r Result) Reason() string {
	switch {
	case r.OK():
		return ""
	case r.Status == 0 && r.Code != "":
		return r.Code + ": " + r.Message
	case r.Status == 0:
		return r.Message
	}
	msg := r.message()
	if msg == "" {
		return fmt.Sprintf("status %d", r.Status)
	}
	return fmt.Sprintf("status %d: %s", r.Status, msg)
}

// message is the server's explanation of an error line: its message, else
// the message in its body's OpenAI-style error object.
func (r Result) message() string {
	if r.Message != "" {
		return r.Message
	}
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(r.Body, &e) == nil {
		return e.Error.Message
	}
	return ""
}

// outputLine is the wire form of a Result.
type outputLine struct {
	CustomID *string `json:"custom_id"`
	Response *struct {
		StatusCode int             `json:"status_code"`
		Body       json.RawMessage `json:"body"`
	} `json:"response"`
	Error *struct {
		Code    any    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// ParseResult reads one line of an output or error file.
func ParseResult(line []byte) (Result, error) {
	var o outputLine
	if err := json.Unmarshal(line, &o); err != nil {
		return Result{}, fmt.Errorf("not a JSON object: %w", err)
	}
	if o.CustomID == nil || *o.CustomID == "" {
		return Result{}, errors.New("no custom_id")
	}
	r := Result{CustomID: *o.CustomID}
	if o.Error != nil {
		r.Message = o.Error.Message
		switch c := o.Error.Code.(type) {
		case string:
			r.Code = c
		case float64:
			r.Code = strconv.FormatFloat(c, 'f', -1, 64)
		}
	}
	if o.Response != nil {
		r.Status = o.Response.StatusCode
		r.Body = o.Response.Body
		if r.Status < 100 || r.Status > 599 {
			return Result{}, fmt.Errorf("request %s: response status %d", r.CustomID, r.Status)
		}
		if r.Status == 200 && (len(r.Body) == 0 || string(r.Body) == "null") {
			return Result{}, fmt.Errorf("request %s: a 200 response without a body", r.CustomID)
		}
		return r, nil
	}
	if o.Error == nil {
		return Result{}, fmt.Errorf("request %s: neither a response nor an error", r.CustomID)
	}
	return r, nil
}

// ReadResults reads an output or error file line by line and calls fn
// with each line's number (from 1) and its Result, or the reason it could
// not be read. Blank lines are skipped. It stops at fn's first error.
func ReadResults(r io.Reader, fn func(line int, res Result, err error) error) error {
	br := bufio.NewReaderSize(r, 1<<16)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			res, perr := ParseResult(line)
			if ferr := fn(n, res, perr); ferr != nil {
				return ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading results, line %d: %w", n, err)
		}
	}
}

// ReadInput reads a batch input file line by line (for tests and for
// checking an export).
func ReadInput(r io.Reader, fn func(line int, in InputLine) error) error {
	br := bufio.NewReaderSize(r, 1<<16)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var in InputLine
			if uerr := json.Unmarshal(line, &in); uerr != nil {
				return fmt.Errorf("input line %d: %w", n, uerr)
			}
			if ferr := fn(n, in); ferr != nil {
				return ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading input, line %d: %w", n, err)
		}
	}
}

// URLOf is the url of the input line for a request body: EmbedURL for an
// embeddings body (an "input" and no "messages"), else ChatURL. A file of
// requests exported for several models (vLLM's run_batch reads both
// kinds) names each line's url with it.
func URLOf(body []byte) string {
	var probe struct {
		Input    json.RawMessage `json:"input"`
		Messages json.RawMessage `json:"messages"`
	}
	if json.Unmarshal(body, &probe) == nil && len(probe.Input) > 0 && len(probe.Messages) == 0 {
		return EmbedURL
	}
	return ChatURL
}
