package view

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/ac3/ac3/pipeline/ledger"
)

//go:embed assets
var assets embed.FS

// DefaultAddr is where the view listens unless told otherwise: loopback,
// so nothing outside the machine can read the run.
const DefaultAddr = "127.0.0.1:8080"

// Options tune Serve.
type Options struct {
	// Addr is host:port to listen on (DefaultAddr when empty).
	Addr string
	// Expose allows an address other than loopback. Anyone who can reach
	// it then reads the whole run: conversations, answers, verdicts.
	Expose bool
	// Ready, if set, is called with the view's URL once it listens.
	Ready func(url string)
}

// CheckAddr refuses an address that is not loopback unless expose is set.
// A host left empty (":8080") listens on every interface, so it counts as
// exposed too.
func CheckAddr(addr string, expose bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q: %w", addr, err)
	}
	if expose || isLoopback(host) {
		return nil
	}
	return fmt.Errorf("--addr %s is not a loopback address: anyone who can reach it could read the whole run; pass --expose to allow it", addr)
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Serve serves the view of the run l (opened read-only) until ctx is done,
// then shuts the server down, letting requests in flight finish for up to
// a second.
func Serve(ctx context.Context, l *ledger.Ledger, opts Options) error {
	addr := opts.Addr
	if addr == "" {
		addr = DefaultAddr
	}
	if err := CheckAddr(addr, opts.Expose); err != nil {
		return err
	}
	h, err := New(l)
	if err != nil {
		return err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", addr, err)
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	if opts.Ready != nil {
		opts.Ready("http://" + ln.Addr().String() + "/")
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Handler is the view's HTTP handler over one run.
type Handler struct {
	l     *ledger.Ledger
	pages map[string]*template.Template
	mux   *http.ServeMux
	// budget bounds the time one list page spends looking for matches
	// (see the package doc on paging).
	budget time.Duration
	// pageSize is how many rows a list page shows.
	pageSize int
}

// New returns the handler serving the view of l.
func New(l *ledger.Ledger) (*Handler, error) {
	h := &Handler{l: l, budget: 120 * time.Millisecond, pageSize: 50, pages: map[string]*template.Template{}}
	for _, p := range []string{"run", "conversations", "conversation", "verdicts", "quarantine", "error"} {
		t, err := template.New("layout.html").Funcs(funcs()).ParseFS(assets, "assets/layout.html", "assets/"+p+".html")
		if err != nil {
			return nil, fmt.Errorf("parsing the %s page: %w", p, err)
		}
		h.pages[p] = t
	}
	static, err := fs.Sub(assets, "assets/static")
	if err != nil {
		return nil, err
	}
	m := http.NewServeMux()
	m.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	m.HandleFunc("GET /{$}", h.runPage)
	m.HandleFunc("GET /conversations", h.listPage)
	m.HandleFunc("GET /conversation/{id}", h.conversationPage)
	m.HandleFunc("GET /verdicts", h.verdictsPage)
	m.HandleFunc("GET /quarantine", h.quarantinePage)
	h.mux = m
	return h, nil
}

// ServeHTTP implements http.Handler. Every answer forbids framing and
// loading anything from elsewhere: the pages need nothing but their own
// assets.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "no-referrer")
	h.mux.ServeHTTP(w, r)
}

// page is what every page template gets.
type page struct {
	Title string
	Run   string // the run file's path
	Nav   string // which navigation entry is current
	// Refresh, when > 0, reloads the page after that many seconds (the
	// run page, which shows a run that may still be growing).
	Refresh int
	Data    any
}

func (h *Handler) render(w http.ResponseWriter, r *http.Request, name string, p page) {
	p.Run = h.l.Path()
	var b strings.Builder
	if err := h.pages[name].Execute(&b, p); err != nil {
		h.fail(w, r, http.StatusInternalServerError, fmt.Errorf("rendering the page: %w", err))
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	io.WriteString(w, b.String())
}

// fail answers with an error page; a request the client gave up on gets
// nothing.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, code int, err error) {
	if r.Context().Err() != nil {
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	var b strings.Builder
	if terr := h.pages["error"].Execute(&b, page{Title: http.StatusText(code), Run: h.l.Path(), Data: err.Error()}); terr != nil {
		template.HTMLEscape(w, []byte(err.Error()))
		return
	}
	io.WriteString(w, b.String())
}
