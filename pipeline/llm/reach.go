package llm

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"
)

// UnreachableError says that an endpoint could not be reached — its host
// does not resolve, nothing accepts connections at its address, or TLS
// fails — and that no call to it succeeded for Limits.Unreachable. No
// retry within the run can fix it, so it is fatal (errors.Is ErrFatal): the
// run stops, the work in flight stays pending, and the same command
// continues once the endpoint answers.
//
// Error names the base URL (without credentials or query), because the
// address is what the user has to check; Brief, used in events and call
// records, does not.
type UnreachableError struct {
	Endpoint string
	BaseURL  string        // scheme, host and path only
	For      time.Duration // how long it had been unreachable
	Reason   string        // e.g. "connection refused", "host nothing.invalid not found"
	Hint     string        // what to check
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("endpoint %s at %s unreachable for %s: %s; %s", e.Endpoint, e.BaseURL, e.For.Round(time.Second), e.Reason, e.Hint)
}

// Brief is Error without the base URL, for events and call records.
func (e *UnreachableError) Brief() string {
	return fmt.Sprintf("endpoint %s unreachable for %s: %s", e.Endpoint, e.For.Round(time.Second), e.Reason)
}

// Unwrap makes errors.Is(err, ErrFatal) true.
func (e *UnreachableError) Unwrap() error { return ErrFatal }

// errorText is err as call records and events keep it: an unreachable
// endpoint without its address.
func errorText(err error) string {
	var ue *UnreachableError
	if errors.As(err, &ue) {
		return strings.ReplaceAll(err.Error(), ue.Error(), ue.Brief())
	}
	return err.Error()
}

// unreachable says why err means the endpoint cannot be reached, and what
// to check, for the transport failures that no wait for a busy server
// explains: a name that does not resolve, a refused connection, no route,
// a TLS failure. Timeouts, resets and HTTP answers are not among them:
// they keep their own retries.
func unreachable(err error) (reason, hint string, ok bool) {
	var (
		dnsErr  *net.DNSError
		verify  *tls.CertificateVerificationError
		unknown x509.UnknownAuthorityError
		host    x509.HostnameError
		invalid x509.CertificateInvalidError
		record  tls.RecordHeaderError
		alert   tls.AlertError
	)
	const tlsHint = "check the base URL's scheme (https or http) and the server's certificate"
	switch {
	case errors.As(err, &dnsErr):
		reason = "host " + dnsErr.Name + " not found"
		if !dnsErr.IsNotFound {
			reason = "cannot resolve host " + dnsErr.Name + ": " + dnsErr.Err
		}
		return reason, "check the host name in the base URL and DNS", true
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused", "check that the server is up and listening at that address and port", true
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "no route to host", "check the base URL and the network between here and the server", true
	case errors.As(err, &verify), errors.As(err, &unknown), errors.As(err, &host), errors.As(err, &invalid):
		return "TLS: " + lastPart(err.Error()), tlsHint, true
	case errors.As(err, &record), errors.As(err, &alert):
		return "TLS handshake failed: " + lastPart(err.Error()), tlsHint, true
	case strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		// net/http's own text for a plain-HTTP server behind an https URL.
		return "the server answered plain HTTP to an https URL", "use http:// in the base URL, or enable TLS on the server", true
	}
	return "", "", false
}

// publicURL is base without user info, query or fragment: what an error
// line may show of where an endpoint is.
func publicURL(base string) string {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return "the configured base URL"
	}
	u.User, u.RawQuery, u.Fragment, u.ForceQuery = nil, "", "", false
	return u.String()
}

// reach measures how long an endpoint has been unreachable: from the first
// unreachable failure after its last answer (any HTTP answer, even an
// error, shows the server is there). Shared by the endpoint's online calls
// and its batch API.
type reach struct {
	mu    sync.Mutex
	since time.Time // zero while reachable
}

// answered records that the endpoint answered.
func (r *reach) answered() {
	r.mu.Lock()
	r.since = time.Time{}
	r.mu.Unlock()
}

// failed records an unreachable failure at now and returns how long the
// endpoint has been unreachable, and whether this failure began it.
func (r *reach) failed(now time.Time) (down time.Duration, first bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.since.IsZero() {
		r.since = now
		first = true
	}
	return now.Sub(r.since), first
}

// unreachableAfter decides what an unreachable failure (reason, hint) at
// now means: the fatal *UnreachableError once the endpoint has been
// unreachable for its limit, else how long to wait before trying again —
// backoff, but never past the moment the limit is reached, so that the
// run stops on time. first reports whether this failure began the outage.
func (c *Client) unreachableAfter(ep *endpoint, n int, reason, hint string, now time.Time) (wait time.Duration, first bool, fatal error) {
	down, first := ep.reach.failed(now)
	limit := ep.cfg.Limits.Unreachable
	if down >= limit {
		return 0, first, &UnreachableError{Endpoint: ep.cfg.Name, BaseURL: publicURL(ep.cfg.BaseURL), For: down, Reason: reason, Hint: hint}
	}
	return min(c.backoff(n), limit-down+time.Millisecond), first, nil
}

// fatalStatus is the *FatalError for an HTTP answer that no retry fixes
// and that would fail every other call the same way — a rejected key
// (401), a forbidden model (403), an unknown model or wrong base URL
// (404), an exhausted billing quota (429 insufficient_quota) — or nil.
// notFound is the hint for a 404. Online calls and the batch API give the
// same one-line messages for the same fault.
func fatalStatus(cfg Endpoint, status int, msg, raw, notFound string) *FatalError {
	fe := &FatalError{Endpoint: cfg.Name, Status: status, Message: msg}
	switch {
	case status == 429 && strings.Contains(raw, "insufficient_quota"):
		fe.Hint = "billing quota exhausted: check the account's plan and credits"
	case status == 401:
		fe.Hint = keyHint(cfg)
	case status == 403 && cfg.APIKeyEnv == "" && cfg.APIKey == "":
		fe.Hint = "model " + cfg.Model + " is forbidden; " + keyHint(cfg)
	case status == 403:
		fe.Hint = "the key may not use model " + cfg.Model + "; " + keyHint(cfg) + " and the account's access"
	case status == 404:
		fe.Hint = notFound
	default:
		return nil
	}
	return fe
}

// modelNotFound is the hint for a 404 to a chat request.
func modelNotFound(cfg Endpoint) string {
	return "check the model name " + cfg.Model + " and the endpoint's base URL"
}

// FatalStatus returns the error an online call to endpoint would have
// returned for an answer with this status and body when that error stops
// the run (a *FatalError: 401, 403, 404, exhausted quota), else nil. The
// batch driver uses it for the error lines of a batch, so a batch run stops
// for the same faults, with the same line, as an online run.
func (c *Client) FatalStatus(endpoint string, status int, msg, raw string) error {
	ep, ok := c.endpoints[endpoint]
	if !ok {
		return nil
	}
	if fe := fatalStatus(ep.cfg, status, msg, raw, modelNotFound(ep.cfg)); fe != nil {
		return fe
	}
	return nil
}
