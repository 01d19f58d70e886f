package filter

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/abadojack/whatlanggo"

	"github.com/ac3/ac3/pipeline/conv"
)

// Identification policies (Options.IdentifyLanguage): which conversations
// get their language from the detector rather than from the input.
const (
	// IdentifyAuto is IdentifyMissing when a language filter is set and
	// IdentifyNever otherwise: identification costs several times what the
	// rest of ingest does (see IdentifyBytes), so it runs only where the
	// filter needs it. The default.
	IdentifyAuto = "auto"
	// IdentifyMissing identifies conversations whose input has no language
	// field (ShareGPT, OpenAI chat, LiC, canonical files without one) and
	// keeps the field where there is one (WildChat), filter or not.
	IdentifyMissing = "missing"
	// IdentifyAlways identifies every conversation, replacing the input's
	// field: for a dataset whose own label one does not trust.
	IdentifyAlways = "always"
	// IdentifyNever uses the input's field only, as before identification
	// existed: formats without one stay unknown (see UnknownLanguage).
	IdentifyNever = "never"
)

// Detector names the language identifier and its version, as recorded in
// conv.Conversation.LanguageDetector. It changes when the library or what
// it reads (IdentifyBytes) changes, so a run's conversations say which
// identifier labelled them.
const Detector = "whatlanggo v1.0.1"

// IdentifyBytes is how much user text identification reads: the user turns
// in order, joined by newlines, cut at this many bytes (at a character
// boundary). A dump's conversations can hold hundreds of kilobytes; a fixed
// prefix bounds the cost per conversation whatever its length. On the 50
// WildChat conversations of fixtures/wildchat, 512 bytes agree with the
// dataset's field on 47, 1024 on 48 and the whole user text on 48, while
// 1024 costs half as much again as 512 (the README has the figures).
const IdentifyBytes = 512

// identifyPolicy parses Options.IdentifyLanguage; "" is IdentifyAuto.
func identifyPolicy(s string) (string, bool) {
	switch p := strings.ToLower(strings.TrimSpace(s)); p {
	case "":
		return IdentifyAuto, true
	case IdentifyAuto, IdentifyMissing, IdentifyAlways, IdentifyNever:
		return p, true
	}
	return "", false
}

// Identify returns the language of c's user turns, named as WildChat names
// languages ("English", "Chinese"), and the detector's confidence in [0,1].
// ok is false when the text gives no language to find: no user text, only
// digits, punctuation and symbols, or text on which the detector's two best
// languages tie (it reports confidence 0 and breaks the tie by map order,
// which would make a run's labels change from one ingest to the next).
//
// Only user turns are read: the filter selects conversations by the
// language their users write in. Assistant replies mostly follow the user's
// language, are several times longer (so reading them would cost more),
// and are sometimes in English whatever the user wrote; the system message
// is the operator's. Identify is safe for concurrent use.
func Identify(c *conv.Conversation) (name string, confidence float64, ok bool) {
	text := userSample(c, IdentifyBytes)
	if text == "" {
		return "", 0, false
	}
	info := whatlanggo.Detect(text)
	if info.Lang < 0 || info.Confidence == 0 {
		return "", 0, false
	}
	confidence = info.Confidence
	if !(confidence >= 0) { // NaN, or below 0: nothing said
		confidence = 0
	}
	return langName(info.Lang), min(confidence, 1), true
}

// userSample returns the first limit bytes of c's user turns joined by
// newlines, without a character cut in two at the end. When the first user
// turn is long enough, it is a slice of it and nothing is copied.
func userSample(c *conv.Conversation, limit int) string {
	var b []byte
	first := ""
	n := 0
	for i := range c.Messages {
		m := &c.Messages[i]
		if m.Role != conv.User || m.Content == "" {
			continue
		}
		n++
		switch n {
		case 1:
			if len(m.Content) > limit {
				return wholeRunes(m.Content[:limit])
			}
			first = m.Content
			continue
		case 2:
			b = make([]byte, 0, limit)
			b = append(b, first...)
		}
		if len(b) >= limit {
			return string(b) // the newline would pass the limit
		}
		b = append(b, '\n')
		if room := limit - len(b); len(m.Content) > room {
			return wholeRunes(string(append(b, m.Content[:room]...)))
		}
		b = append(b, m.Content...)
	}
	if n <= 1 {
		return first
	}
	return string(b)
}

// wholeRunes drops the bytes of a character cut short at the end of s,
// which the detector would otherwise read as an invalid character.
func wholeRunes(s string) string {
	for i := 0; i < utf8.UTFMax-1 && s != ""; i++ {
		if r, size := utf8.DecodeLastRuneInString(s); r != utf8.RuneError || size != 1 {
			break
		}
		s = s[:len(s)-1]
	}
	return s
}

// langName names a whatlanggo language the way WildChat's language field
// does (WildChat's labels come from Lingua, whose names whatlanggo shares
// except for Chinese), so that --language English and the dataset's own
// field mean the same whichever one a conversation carries.
func langName(l whatlanggo.Lang) string {
	if l == whatlanggo.Cmn {
		return "Chinese" // whatlanggo says Mandarin: it reads the Han script
	}
	if name, ok := whatlanggo.Langs[l]; ok {
		return name
	}
	return l.Iso6393()
}

// Identifies reports whether Label may identify languages at all: false for
// IdentifyNever, and for IdentifyAuto without a language filter.
func (f *Filter) Identifies() bool {
	return f.identify != IdentifyNever && (f.identify != IdentifyAuto || f.langs != nil)
}

// Label sets c's language and says where it came from, as the
// identification policy asks: the input's own field is kept (marked
// conv.LanguageFromInput) unless the policy is IdentifyAlways; a
// conversation without one is identified when Identifies. A conversation
// whose source was recorded already (a canonical file written by ac3)
// keeps it. Label does not read the text when it keeps the input's field.
func (f *Filter) Label(c *conv.Conversation) {
	has := strings.TrimSpace(c.Language) != ""
	if has && c.LanguageSource != "" && f.identify != IdentifyAlways {
		return
	}
	if c.LanguageSource == conv.LanguageIdentified && c.LanguageDetector == Detector {
		return // identified by this very detector: same text, same answer
	}
	switch {
	case has && f.identify != IdentifyAlways:
		c.LanguageSource = conv.LanguageFromInput
		c.LanguageDetector, c.LanguageConfidence = "", 0
	case !f.Identifies():
		// Nothing to say where an absent language came from.
		c.LanguageSource, c.LanguageDetector, c.LanguageConfidence = "", "", 0
	default:
		name, confidence, ok := Identify(c)
		if !ok {
			c.Language, c.LanguageSource, c.LanguageDetector, c.LanguageConfidence = "", "", "", 0
			return
		}
		c.Language, c.LanguageSource = name, conv.LanguageIdentified
		c.LanguageDetector, c.LanguageConfidence = Detector, confidence
	}
}

// Apply labels c's language (Label) and checks it (Check), in the order that
// reads the least text: when a language filter is set the language must be
// known before Check; otherwise only the conversations Check keeps are
// identified, so those the cheap filters drop cost nothing more. It is what
// ingest, convert and the dry run call, so all three count alike.
func (f *Filter) Apply(c *conv.Conversation) (keep bool, reason Reason) {
	if f.langs != nil {
		f.Label(c)
		return f.Check(c)
	}
	if keep, reason = f.Check(c); keep {
		f.Label(c)
	}
	return keep, reason
}

// Prelabel labels c as Apply will, so that Apply then finds the work done:
// for labelling many conversations on several goroutines ahead of the one
// that applies the filter in order. Like Apply, without a language filter it
// labels only the conversations Check keeps.
func (f *Filter) Prelabel(c *conv.Conversation) {
	if f.langs == nil {
		if keep, _ := f.Check(c); !keep {
			return
		}
	}
	f.Label(c)
}

func identifyError(s string) string {
	return fmt.Sprintf("%q is not %q, %q, %q or %q", s, IdentifyAuto, IdentifyMissing, IdentifyAlways, IdentifyNever)
}
