package report

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/ac3/ac3/pipeline/ledger"
)

// Progress is where one planned stage variant stands, so no number of the
// report is read without knowing how much of the run it covers: a strategy
// whose turns failed is never shown as "0 open" without its failures.
// Conversation counts are tasks (one per conversation and variant, at the
// variant's current version); a conversation whose task failed has at
// least one failed unit.
type Progress struct {
	Stage                 string    `json:"stage"`
	Variant               string    `json:"variant"`
	ConversationsDone     int64     `json:"conversations_done"`
	ConversationsFailed   int64     `json:"conversations_failed"`
	ConversationsNotTried int64     `json:"conversations_not_attempted"` // no task recorded yet
	UnitsDone             int64     `json:"units_done"`
	UnitsFailed           int64     `json:"units_failed"`
	Failures              []Failure `json:"failures"` // failed units by reason, most frequent first
}

// Failure is one reason units failed, with how many and one example.
type Failure struct {
	Reason  string         `json:"reason"`
	Units   int64          `json:"units"`
	Example FailureExample `json:"example"`
}

// FailureExample is the first failed unit seen with a reason.
type FailureExample struct {
	Conversation string `json:"conversation"`
	Turn         int    `json:"turn"`
	Error        string `json:"error"`
}

// maxReasons bounds the distinct reasons kept per variant; the rest are
// counted under otherReason, so a model that fails in a new way on every
// turn cannot make the report grow with the run.
const (
	maxReasons  = 32
	otherReason = "other reasons"
)

type progressKey struct{ stage, variant string }

type unitCounts struct {
	done, failed int64
	reasons      map[string]*Failure
}

// progressLog counts the units of every stage variant the fold reads, and
// groups the failed ones by reason.
type progressLog struct {
	by map[progressKey]*unitCounts
}

func newProgressLog() *progressLog { return &progressLog{by: map[progressKey]*unitCounts{}} }

// watch marks a variant as read by the fold, so its counts come from the
// log even when it has no unit yet.
func (p *progressLog) watch(stage, variant string) *unitCounts {
	k := progressKey{stage, variant}
	c := p.by[k]
	if c == nil {
		c = &unitCounts{reasons: map[string]*Failure{}}
		p.by[k] = c
	}
	return c
}

func (p *progressLog) add(stage string, u ledger.Unit) {
	c := p.watch(stage, u.Variant)
	if u.Status == ledger.Done {
		c.done++
		return
	}
	c.failed++
	reason := failureReason(u.Error)
	f := c.reasons[reason]
	if f == nil {
		if len(c.reasons) >= maxReasons {
			reason = otherReason
			f = c.reasons[reason]
		}
		if f == nil {
			f = &Failure{Reason: reason, Example: FailureExample{Conversation: u.ConvID, Turn: u.Turn, Error: clip(u.Error, 500)}}
			c.reasons[reason] = f
		}
	}
	f.Units++
}

func (c *unitCounts) failures() []Failure {
	out := make([]Failure, 0, len(c.reasons))
	for _, f := range c.reasons {
		out = append(out, *f)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Units != out[j].Units {
			return out[i].Units > out[j].Units
		}
		return out[i].Reason < out[j].Reason
	})
	return out
}

var (
	quotedRe = regexp.MustCompile(`"[^"]*"|'[^']*'|` + "`[^`]*`")
	digitsRe = regexp.MustCompile(`[0-9]+`)
	spacesRe = regexp.MustCompile(`\s+`)
)

// failureReason groups unit errors that differ only in their particulars:
// quoted text becomes "…" and numbers become N, so "parsing model answer
// (3 tries): unknown outcome \"draw\"" and the same with 2 tries and "maybe"
// share a reason. It keeps the first 160 characters.
func failureReason(err string) string {
	s := strings.TrimSpace(err)
	if s == "" {
		return "no error recorded"
	}
	// Masking can pair quotes that were not paired before (a masked span's
	// quotes next to a stray one), so repeat until nothing changes: a reason
	// must be its own reason or equal errors would group apart.
	for range 8 {
		next := quotedRe.ReplaceAllString(s, `"…"`)
		next = digitsRe.ReplaceAllString(next, "N")
		next = spacesRe.ReplaceAllString(next, " ")
		if next == s {
			break
		}
		s = next
	}
	return clip(s, 160)
}

// clip keeps at most n bytes of s, cut at a rune boundary and marked.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// stageProgress lists, per planned stage and variant in status order, what
// is done, what failed and why, and what was never attempted. Conversation
// counts come from the run's status; unit counts and reasons from the
// fold's log, or, for a variant the fold did not read (an annotation
// variant the report does not summarize), from the status, reading that
// variant's units for the reasons only when some failed.
//
// The ledger is growing a query that gives all of this at once; this is the
// one function to switch over to it.
func stageProgress(ctx context.Context, src Source, st ledger.Status, log *progressLog) ([]Progress, error) {
	out := []Progress{}
	for _, ss := range st.Stages {
		p := Progress{Stage: ss.Stage, Variant: ss.Variant, ConversationsDone: ss.Done, ConversationsFailed: ss.Failed,
			ConversationsNotTried: max(ss.Pending, 0), UnitsDone: ss.UnitsDone, UnitsFailed: ss.UnitsFailed, Failures: []Failure{}}
		c, read := log.by[progressKey{ss.Stage, ss.Variant}]
		if !read && ss.UnitsFailed > 0 {
			own := newProgressLog()
			c = own.watch(ss.Stage, ss.Variant)
			v := ledger.Variant{Name: ss.Variant, Version: ss.Version}
			err := src.Units(ctx, ss.Stage, []ledger.Variant{v}, 0, maxSeq, func(u ledger.Unit) error {
				own.add(ss.Stage, u)
				return nil
			})
			if err != nil {
				return nil, err
			}
			read = true
		}
		if read {
			p.UnitsDone, p.UnitsFailed, p.Failures = c.done, c.failed, c.failures()
		}
		out = append(out, p)
	}
	return out, nil
}

// progressNotes says, for each variant with failed units or conversations
// never attempted, that its numbers cover only part of the run.
func progressNotes(ps []Progress) []string {
	var notes []string
	for _, p := range ps {
		if p.UnitsFailed == 0 && p.ConversationsNotTried == 0 {
			continue
		}
		var parts []string
		if p.UnitsFailed > 0 {
			s := fmt.Sprintf("%d of %d units failed", p.UnitsFailed, p.UnitsDone+p.UnitsFailed)
			if len(p.Failures) > 0 {
				s += fmt.Sprintf(" (most often: %s)", p.Failures[0].Reason)
			}
			parts = append(parts, s)
		}
		if p.ConversationsNotTried > 0 {
			parts = append(parts, fmt.Sprintf("%d conversations were never attempted", p.ConversationsNotTried))
		}
		note := fmt.Sprintf("%s %s: %s; its numbers cover the %d done units only.", p.Stage, p.Variant, strings.Join(parts, " and "), p.UnitsDone)
		if p.UnitsFailed > 0 {
			note += fmt.Sprintf(" 'ac3 retry --stage %s' queues the failed units again.", p.Stage)
		}
		notes = append(notes, note)
	}
	return notes
}
