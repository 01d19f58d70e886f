package filter

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ac3/ac3/pipeline/conv"
)

// Reason says why a conversation was dropped. The values are stable: they
// are written to the checkpoint store and shown in reports.
type Reason string

// The drop reasons. Check returns them in this order of precedence, first
// failing filter wins; ReasonDuplicate is never returned by Check (ingest
// drops exact duplicates before filtering) but is listed so that every drop
// reason lives in one place.
const (
	ReasonDuplicate       Reason = "duplicate"
	ReasonLanguage        Reason = "language"
	ReasonTooFewTurns     Reason = "too_few_turns"
	ReasonTooManyTurns    Reason = "too_many_turns"
	ReasonToxic           Reason = "toxic"
	ReasonRedacted        Reason = "redacted"
	ReasonMessageTooLarge Reason = "message_too_large"
	ReasonDomain          Reason = "domain"
)

// AllReasons returns every drop reason in the order a conversation meets
// them in the pipeline: duplicate at ingest, then the filters in Check order.
// Reports use it to print a funnel with stable rows.
func AllReasons() []Reason {
	return []Reason{
		ReasonDuplicate,
		ReasonLanguage,
		ReasonTooFewTurns,
		ReasonTooManyTurns,
		ReasonToxic,
		ReasonRedacted,
		ReasonMessageTooLarge,
		ReasonDomain,
	}
}

// Policies for conversations whose format has no language field.
const (
	UnknownKeep = "keep"
	UnknownDrop = "drop"
)

// Options selects conversations. The zero value keeps everything; each zero
// or empty field turns its filter off.
type Options struct {
	// Languages keeps conversations in one of these languages: names as in
	// WildChat ("English") or ISO 639 codes ("en", "eng", "en-US"), any case.
	Languages []string
	// MinUserTurns and MaxUserTurns bound the number of user messages;
	// 0 means no bound.
	MinUserTurns, MaxUserTurns int
	// Domains keeps conversations whose user messages match a keyword of at
	// least one of these domains (see Domains; names in any case).
	Domains []string
	// DropToxic and DropRedacted drop conversations the source flagged.
	DropToxic, DropRedacted bool
	// MaxMessageBytes drops conversations with any message (system message
	// included) longer than this many bytes; 0 means no limit.
	MaxMessageBytes int
	// UnknownLanguage says what to do, when Languages is set, with a
	// conversation whose language is not known, neither from its input
	// nor from identification: UnknownKeep (the default, also for "") or
	// UnknownDrop.
	UnknownLanguage string
	// IdentifyLanguage says which conversations get their language from the
	// language identifier (see Label): IdentifyAuto (the default, also for
	// ""), IdentifyMissing, IdentifyAlways or IdentifyNever.
	IdentifyLanguage string
}

// FieldError is an invalid option. Field is the Options field name, so the
// CLI can map it to its own config key.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return "filter option " + e.Field + ": " + e.Msg }

// Validate reports every invalid field, each as a *FieldError, joined.
func (o Options) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	for i, l := range o.Languages {
		if strings.TrimSpace(l) == "" {
			bad("Languages", "entry %d is empty", i)
		}
	}
	if o.MinUserTurns < 0 {
		bad("MinUserTurns", "%d is negative", o.MinUserTurns)
	}
	if o.MaxUserTurns < 0 {
		bad("MaxUserTurns", "%d is negative", o.MaxUserTurns)
	}
	if o.MaxUserTurns > 0 && o.MinUserTurns > o.MaxUserTurns {
		bad("MinUserTurns", "%d is greater than MaxUserTurns (%d)", o.MinUserTurns, o.MaxUserTurns)
	}
	for _, d := range o.Domains {
		if domainIndex(d) < 0 {
			bad("Domains", "unknown domain %q; valid domains: %s", d, strings.Join(Domains(), ", "))
		}
	}
	if o.MaxMessageBytes < 0 {
		bad("MaxMessageBytes", "%d is negative", o.MaxMessageBytes)
	}
	switch {
	case o.UnknownLanguage == "", strings.EqualFold(o.UnknownLanguage, UnknownKeep):
	case strings.EqualFold(o.UnknownLanguage, UnknownDrop):
		// Without Languages there is no language filter for the policy to
		// belong to; say so rather than silently ignore it.
		if len(o.Languages) == 0 {
			bad("UnknownLanguage", "%q needs Languages to be set", o.UnknownLanguage)
		}
	default:
		bad("UnknownLanguage", "%q is not %q or %q", o.UnknownLanguage, UnknownKeep, UnknownDrop)
	}
	if _, ok := identifyPolicy(o.IdentifyLanguage); !ok {
		bad("IdentifyLanguage", "%s", identifyError(o.IdentifyLanguage))
	}
	return errors.Join(errs...)
}

// Filter decides which conversations to keep. It is immutable once built,
// so one Filter may be shared by any number of goroutines.
type Filter struct {
	langs        []string // every accepted spelling; nil means no language filter
	dropUnknown  bool
	minTurns     int
	maxTurns     int
	dropToxic    bool
	dropRedacted bool
	maxBytes     int
	domains      uint8 // one bit per wanted domain; 0 means no domain filter
	identify     string
}

// New validates opts and builds a Filter. The keyword automaton is compiled
// once per process and shared.
func New(opts Options) (*Filter, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	f := &Filter{
		dropUnknown:  strings.EqualFold(opts.UnknownLanguage, UnknownDrop),
		minTurns:     opts.MinUserTurns,
		maxTurns:     opts.MaxUserTurns,
		dropToxic:    opts.DropToxic,
		dropRedacted: opts.DropRedacted,
		maxBytes:     opts.MaxMessageBytes,
	}
	f.identify, _ = identifyPolicy(opts.IdentifyLanguage)
	for _, l := range opts.Languages {
		for _, s := range spellings(languageName(l)) {
			if !containsFold(f.langs, s) {
				f.langs = append(f.langs, s)
			}
		}
	}
	for _, d := range opts.Domains {
		f.domains |= 1 << domainIndex(d)
	}
	if f.domains != 0 {
		matcher() // compile now, not on the first conversation
	}
	return f, nil
}

// Check reports whether to keep c and, if not, the first filter it failed.
// Filters run in this order, cheapest first so that the keyword scan, the
// only one that reads text, runs last and only on survivors:
//
//  1. language           (ReasonLanguage)
//  2. min user turns     (ReasonTooFewTurns)
//  3. max user turns     (ReasonTooManyTurns)
//  4. toxic flag         (ReasonToxic)
//  5. redacted flag      (ReasonRedacted)
//  6. message size       (ReasonMessageTooLarge)
//  7. domain keywords    (ReasonDomain)
//
// A kept conversation gets reason "". Check does not allocate.
func (f *Filter) Check(c *conv.Conversation) (keep bool, reason Reason) {
	if !f.languageOK(c) {
		return false, ReasonLanguage
	}
	if f.minTurns > 0 || f.maxTurns > 0 {
		n := c.UserTurns()
		if n < f.minTurns {
			return false, ReasonTooFewTurns
		}
		if f.maxTurns > 0 && n > f.maxTurns {
			return false, ReasonTooManyTurns
		}
	}
	if f.dropToxic && c.Toxic {
		return false, ReasonToxic
	}
	if f.dropRedacted && c.Redacted {
		return false, ReasonRedacted
	}
	if f.maxBytes > 0 && tooLarge(c, f.maxBytes) {
		return false, ReasonMessageTooLarge
	}
	if f.domains != 0 && scanUser(c, f.domains)&f.domains == 0 {
		return false, ReasonDomain
	}
	return true, ""
}

// LanguageKnown reports whether c carries a language at all. With the default
// UnknownKeep policy the language filter does not apply to such
// conversations; callers count them with this so the report can say how many
// passed unchecked.
func (f *Filter) LanguageKnown(c *conv.Conversation) bool {
	return strings.TrimSpace(c.Language) != ""
}

func (f *Filter) languageOK(c *conv.Conversation) bool {
	if f.langs == nil {
		return true
	}
	l := strings.TrimSpace(c.Language)
	if l == "" {
		return !f.dropUnknown
	}
	if containsFold(f.langs, l) {
		return true
	}
	// Formats that use tags may add a region ("en-US").
	if b := baseTag(l); len(b) != len(l) {
		return containsFold(f.langs, b)
	}
	return false
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

func tooLarge(c *conv.Conversation, limit int) bool {
	if len(c.System) > limit {
		return true
	}
	for i := range c.Messages {
		if len(c.Messages[i].Content) > limit {
			return true
		}
	}
	return false
}
