package llmtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"time"
)

// BatchOptions configure the server's batch API: POST /v1/files (upload,
// multipart with purpose and file), GET /v1/files/{id}/content, and POST
// /v1/batches (create), GET /v1/batches (list, newest first, with limit and
// after), GET /v1/batches/{id} (retrieve), POST /v1/batches/{id}/cancel.
//
// A batch's lines are answered by the same rules and chaos as online
// requests, with each line's custom_id as the request key (KeyHeader), at
// the moment the batch finishes. A line whose answer is not 200 goes to the
// error file with its status and body; a hang or reset goes there as a
// server error.
//
// Progress is counted in retrievals, not time, so tests do not depend on a
// clock: a batch answers "in_progress" to its first Polls retrievals and
// finishes on the next (Delay adds a wall-clock minimum for demos).
type BatchOptions struct {
	// Polls is how many retrievals see the batch in progress before it
	// finishes. 0: the first retrieval sees it finished.
	Polls int
	// Delay, when set, is also the least time between creation and the
	// end of a batch.
	Delay time.Duration
	// ExpireAfter, when > 0, answers only the first ExpireAfter lines of
	// each batch; the batch then ends "expired" and the rest go to the
	// error file with code batch_expired (a partial completion).
	ExpireAfter int
	// Fail, when set, makes every new batch fail validation with this
	// message (status "failed", no output).
	Fail string
	// CreateStatus, when set, is the HTTP status every batch creation
	// answers with (an error), after storing nothing.
	CreateStatus int
}

type file struct {
	id, name, purpose string
	data              []byte
	created           int64
}

type batchJob struct {
	id, inputFile, endpoint, window string
	metadata                        map[string]string
	created                         time.Time
	polls                           int
	status                          string // validating, in_progress, finalizing, completed, failed, expired, cancelling, cancelled
	outputFile, errorFile           string
	total, completed, failed        int
	errors                          []map[string]any
	finishedAt                      time.Time
}

// BatchInfo is what Batches reports about one batch.
type BatchInfo struct {
	ID, InputFile, OutputFile, ErrorFile, Status string
	Metadata                                     map[string]string
	Total, Completed, Failed                     int
}

// SetBatch replaces the batch options for batches created from now on and
// for batches not yet finished.
func (s *Server) SetBatch(o BatchOptions) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.batchOpts = o
}

// Batches lists the batches created so far, oldest first.
func (s *Server) Batches() []BatchInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]BatchInfo, 0, len(s.order))
	for _, id := range s.order {
		b := s.batches[id]
		out = append(out, BatchInfo{ID: b.id, InputFile: b.inputFile, OutputFile: b.outputFile, ErrorFile: b.errorFile,
			Status: b.status, Metadata: b.metadata, Total: b.total, Completed: b.completed, Failed: b.failed})
	}
	return out
}

// Files reports how many files were uploaded (output files excluded).
func (s *Server) Files() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, f := range s.files {
		if f.purpose == "batch" {
			n++
		}
	}
	return n
}

// FileContent returns a stored file's bytes (tests read input files with it).
func (s *Server) FileContent(id string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.files[id]
	if !ok {
		return nil, false
	}
	return slices.Clone(f.data), true
}

func (s *Server) routeBatch(mux *http.ServeMux) {
	for _, prefix := range []string{"/v1", ""} {
		mux.HandleFunc("POST "+prefix+"/files", s.uploadFile)
		mux.HandleFunc("GET "+prefix+"/files/{id}/content", s.fileContent)
		mux.HandleFunc("POST "+prefix+"/batches", s.createBatch)
		mux.HandleFunc("GET "+prefix+"/batches", s.listBatches)
		mux.HandleFunc("GET "+prefix+"/batches/{id}", s.retrieveBatch)
		mux.HandleFunc("POST "+prefix+"/batches/{id}/cancel", s.cancelBatch)
	}
}

func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	if s.opts.Key != "" && r.Header.Get("Authorization") != "Bearer "+s.opts.Key {
		writeError(w, http.StatusUnauthorized, "Incorrect API key provided.", "invalid_api_key", nil)
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	b, _ := json.Marshal(v)
	_, _ = w.Write(b)
}

// newID returns a fresh id with prefix; s.mu must be held.
func (s *Server) newID(prefix string) string {
	s.nextID++
	return fmt.Sprintf("%s-%06d", prefix, s.nextID)
}

func (f *file) object() map[string]any {
	return map[string]any{"id": f.id, "object": "file", "bytes": len(f.data), "created_at": f.created,
		"filename": f.name, "purpose": f.purpose, "status": "processed"}
}

func (s *Server) uploadFile(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	if err := r.ParseMultipartForm(64 << 20); err != nil {
		writeError(w, http.StatusBadRequest, "expected a multipart form: "+err.Error(), "", nil)
		return
	}
	purpose := r.FormValue("purpose")
	if purpose != "batch" {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("purpose %q: only batch is supported here", purpose), "", nil)
		return
	}
	f, hdr, err := r.FormFile("file")
	if err != nil {
		writeError(w, http.StatusBadRequest, "no file in the form", "", nil)
		return
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		writeError(w, http.StatusBadRequest, "reading the file: "+err.Error(), "", nil)
		return
	}
	s.mu.Lock()
	fo := &file{id: s.newID("file"), name: hdr.Filename, purpose: purpose, data: data, created: time.Now().Unix()}
	s.files[fo.id] = fo
	s.mu.Unlock()
	writeJSON(w, fo.object())
}

func (s *Server) fileContent(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	s.mu.Lock()
	f, ok := s.files[r.PathValue("id")]
	s.mu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, "No such File object: "+r.PathValue("id"), "", nil)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write(f.data)
}

func (b *batchJob) object() map[string]any {
	o := map[string]any{
		"id": b.id, "object": "batch", "endpoint": b.endpoint, "input_file_id": b.inputFile,
		"completion_window": b.window, "status": b.status, "created_at": b.created.Unix(),
		"expires_at":     b.created.Add(24 * time.Hour).Unix(),
		"request_counts": map[string]int{"total": b.total, "completed": b.completed, "failed": b.failed},
		"metadata":       b.metadata,
	}
	if b.outputFile != "" {
		o["output_file_id"] = b.outputFile
	}
	if b.errorFile != "" {
		o["error_file_id"] = b.errorFile
	}
	if len(b.errors) > 0 {
		o["errors"] = map[string]any{"object": "list", "data": b.errors}
	}
	switch b.status {
	case "completed":
		o["completed_at"] = b.finishedAt.Unix()
	case "failed":
		o["failed_at"] = b.finishedAt.Unix()
	case "expired":
		o["expired_at"] = b.finishedAt.Unix()
	case "cancelled":
		o["cancelled_at"] = b.finishedAt.Unix()
	}
	return o
}

func (s *Server) createBatch(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	var req struct {
		InputFileID      string            `json:"input_file_id"`
		Endpoint         string            `json:"endpoint"`
		CompletionWindow string            `json:"completion_window"`
		Metadata         map[string]string `json:"metadata"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "malformed body: "+err.Error(), "", nil)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.batchOpts.CreateStatus; st != 0 {
		writeError(w, st, "batch creation refused (test server)", "", nil)
		return
	}
	f, ok := s.files[req.InputFileID]
	switch {
	case !ok:
		writeError(w, http.StatusBadRequest, "No such File object: "+req.InputFileID, "", nil)
		return
	case req.Endpoint != chatURL && req.Endpoint != embedURL:
		writeError(w, http.StatusBadRequest, "endpoint must be /v1/chat/completions or /v1/embeddings here", "", nil)
		return
	case req.CompletionWindow != "24h":
		writeError(w, http.StatusBadRequest, "completion_window must be 24h", "", nil)
		return
	}
	b := &batchJob{id: s.newID("batch"), inputFile: f.id, endpoint: req.Endpoint, window: req.CompletionWindow,
		metadata: req.Metadata, created: time.Now(), status: "validating"}
	lines, verrs := validate(f.data, req.Endpoint)
	b.total = len(lines)
	switch {
	case s.batchOpts.Fail != "":
		verrs = append(verrs, map[string]any{"code": "invalid_request", "message": s.batchOpts.Fail})
	}
	if len(verrs) > 0 {
		b.status, b.errors, b.finishedAt = "failed", verrs, time.Now()
	}
	s.batches[b.id] = b
	s.order = append(s.order, b.id)
	writeJSON(w, b.object())
}

// inputLine is one line of a batch input file.
type inputLine struct {
	CustomID string          `json:"custom_id"`
	Method   string          `json:"method"`
	URL      string          `json:"url"`
	Body     json.RawMessage `json:"body"`
}

// The urls a batch may carry: every line of a batch has its endpoint's.
const (
	chatURL  = "/v1/chat/completions"
	embedURL = "/v1/embeddings"
)

// validate reads an input file as the API would for a batch of endpoint
// (chatURL or embedURL), returning its lines and the errors that fail the
// whole batch.
func validate(data []byte, endpoint string) ([]inputLine, []map[string]any) {
	var lines []inputLine
	var errs []map[string]any
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	n := 0
	for sc.Scan() {
		n++
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var l inputLine
		bad := func(msg string) {
			errs = append(errs, map[string]any{"code": "invalid_request", "message": msg, "line": n})
		}
		switch err := json.Unmarshal(sc.Bytes(), &l); {
		case err != nil:
			bad("line is not JSON: " + err.Error())
		case l.CustomID == "":
			bad("missing custom_id")
		case seen[l.CustomID]:
			bad("duplicate custom_id " + l.CustomID)
		case l.Method != "POST" || l.URL != endpoint:
			bad("method must be POST and url " + endpoint + ", the batch's endpoint")
		case len(l.Body) == 0:
			bad("missing body")
		default:
			seen[l.CustomID] = true
			lines = append(lines, l)
		}
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, map[string]any{"code": "invalid_file", "message": err.Error()})
	}
	if len(lines) == 0 && len(errs) == 0 {
		errs = append(errs, map[string]any{"code": "empty_file", "message": "the input file has no requests"})
	}
	return lines, errs
}

func (s *Server) retrieveBatch(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	s.mu.Lock()
	b, ok := s.batches[r.PathValue("id")]
	if !ok {
		s.mu.Unlock()
		writeError(w, http.StatusNotFound, "No such Batch: "+r.PathValue("id"), "", nil)
		return
	}
	finish := false
	switch b.status {
	case "validating", "in_progress", "cancelling":
		b.polls++
		if b.status == "cancelling" || (b.polls > s.batchOpts.Polls && time.Since(b.created) >= s.batchOpts.Delay) {
			finish = true
		} else {
			b.status = "in_progress"
		}
	}
	s.mu.Unlock()
	if finish {
		s.finish(b)
	}
	s.mu.Lock()
	o := b.object()
	s.mu.Unlock()
	writeJSON(w, o)
}

func (s *Server) listBatches(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	limit := 20
	if v, err := strconv.Atoi(r.URL.Query().Get("limit")); err == nil && v > 0 {
		limit = v
	}
	after := r.URL.Query().Get("after")
	s.mu.Lock()
	var data []map[string]any
	started := after == ""
	more := false
	for i := len(s.order) - 1; i >= 0; i-- { // newest first
		id := s.order[i]
		if !started {
			started = id == after
			continue
		}
		if len(data) == limit {
			more = true
			break
		}
		data = append(data, s.batches[id].object())
	}
	s.mu.Unlock()
	out := map[string]any{"object": "list", "data": data, "has_more": more}
	if len(data) > 0 {
		out["first_id"], out["last_id"] = data[0]["id"], data[len(data)-1]["id"]
	}
	if data == nil {
		out["data"] = []any{}
	}
	writeJSON(w, out)
}

func (s *Server) cancelBatch(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.batches[r.PathValue("id")]
	if !ok {
		writeError(w, http.StatusNotFound, "No such Batch: "+r.PathValue("id"), "", nil)
		return
	}
	switch b.status {
	case "validating", "in_progress", "finalizing":
		b.status = "cancelling"
	case "cancelling":
	default:
		writeError(w, http.StatusConflict, "Cannot cancel a batch with status "+b.status, "", nil)
		return
	}
	writeJSON(w, b.object())
}

// outputLine is one line of an output or error file.
type outputLine struct {
	ID       string         `json:"id"`
	CustomID string         `json:"custom_id"`
	Response *lineResponse  `json:"response"`
	Error    map[string]any `json:"error"`
}

type lineResponse struct {
	StatusCode int             `json:"status_code"`
	RequestID  string          `json:"request_id"`
	Body       json.RawMessage `json:"body"`
}

// finish answers a batch's lines (all of them, the first ExpireAfter, or
// none when it is being cancelled) and writes its output and error files.
func (s *Server) finish(b *batchJob) {
	s.mu.Lock()
	f := s.files[b.inputFile]
	cancelling := b.status == "cancelling"
	expireAfter := s.batchOpts.ExpireAfter
	s.mu.Unlock()
	lines, _ := validate(f.data, b.endpoint)
	var out, errs bytes.Buffer
	completed, failed := 0, 0
	write := func(buf *bytes.Buffer, l outputLine) {
		bs, _ := json.Marshal(l)
		buf.Write(append(bs, '\n'))
	}
	status := "completed"
	for i, l := range lines {
		reqID := fmt.Sprintf("batch_req_%s_%d", b.id, i)
		if cancelling || (expireAfter > 0 && i >= expireAfter) {
			code, msg := "batch_expired", "This request could not be executed before the completion window expired."
			status = "expired"
			if cancelling {
				code, msg, status = "batch_cancelled", "This request was not executed because the batch was cancelled.", "cancelled"
			}
			write(&errs, outputLine{ID: reqID, CustomID: l.CustomID, Error: map[string]any{"code": code, "message": msg}})
			failed++
			continue
		}
		hr := httptest.NewRequest(http.MethodPost, l.URL, bytes.NewReader(l.Body))
		if s.opts.Key != "" {
			hr.Header.Set("Authorization", "Bearer "+s.opts.Key)
		}
		rec := httptest.NewRecorder()
		st := s.answer(rec, hr, l.Body, l.CustomID, b.id)
		switch {
		case st == 0:
			write(&errs, outputLine{ID: reqID, CustomID: l.CustomID, Error: map[string]any{"code": "server_error", "message": "the request could not be completed"}})
			failed++
		case st == http.StatusOK && json.Valid(rec.Body.Bytes()):
			write(&out, outputLine{ID: reqID, CustomID: l.CustomID, Response: &lineResponse{StatusCode: st, RequestID: reqID, Body: rec.Body.Bytes()}})
			completed++
		case st == http.StatusOK:
			write(&errs, outputLine{ID: reqID, CustomID: l.CustomID, Error: map[string]any{"code": "server_error", "message": "the model's answer could not be read"}})
			failed++
		default:
			body := rec.Body.Bytes()
			if !json.Valid(body) {
				body, _ = json.Marshal(string(body))
			}
			write(&errs, outputLine{ID: reqID, CustomID: l.CustomID, Response: &lineResponse{StatusCode: st, RequestID: reqID, Body: body}})
			failed++
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if out.Len() > 0 {
		of := &file{id: s.newID("file"), name: b.id + "_output.jsonl", purpose: "batch_output", data: out.Bytes(), created: time.Now().Unix()}
		s.files[of.id] = of
		b.outputFile = of.id
	}
	if errs.Len() > 0 {
		ef := &file{id: s.newID("file"), name: b.id + "_error.jsonl", purpose: "batch_output", data: errs.Bytes(), created: time.Now().Unix()}
		s.files[ef.id] = ef
		b.errorFile = ef.id
	}
	b.completed, b.failed, b.status, b.finishedAt = completed, failed, status, time.Now()
}
