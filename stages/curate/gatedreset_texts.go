package curate

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/ac3/ac3/pipeline/prompt"
	"github.com/ac3/ac3/stages/analyze"
	"github.com/ac3/ac3/stages/curate/curated"
)

// The texts the AC3 operators put into a context: ours (ResetText,
// AugmentText, RewriteText), and users' templates that replace them
// (Texts).

// templateVersion versions the fixed texts below (reset template, augment
// and rewrite framing); bump it when any of them changes.
const templateVersion = "t1"

// ResetText fills the reset template with an analysis: the consolidated
// request and the earlier work that fits it. It is fixed text around the two
// fields, so the same analysis always gives the same context and no call is
// needed. The user's latest message follows it in the same user message.
func ResetText(spec, aligned string) string {
	if strings.TrimSpace(aligned) == "" {
		aligned = "(nothing yet)"
	}
	return "[Context reset] The conversation up to this point has been replaced by a reviewed summary. " +
		"It states what the user is asking for, consolidated from the user's own messages, and the earlier work that fits that request. " +
		"The earlier assistant replies themselves are not shown.\n\n" +
		"What the user wants:\n" + strings.TrimSpace(spec) + "\n\n" +
		"Earlier work that fits the request:\n" + strings.TrimSpace(aligned) + "\n\n" +
		"[End of summary. The user's latest message follows.]"
}

// AugmentText is the analysis as augment appends it after u_t, marked as a
// reviewer's note so the respondent does not take it for the user's words.
func AugmentText(a analyze.Analysis) string {
	return "[Review of the conversation so far, added by a reviewer; not written by the user]\n\n" +
		"What the user wants:\n" + strings.TrimSpace(a.Spec) + "\n\n" +
		"What fits the request so far:\n" + orNothing(a.Aligned) + "\n\n" +
		"Problems to avoid:\n" + orNothing(a.Issues) + "\n\n" +
		"[End of review]"
}

// RewriteText frames the rewrite call's briefing, which replaces the
// history; the user's latest message follows it.
func RewriteText(briefing string) string {
	return "[Context rewritten] The conversation up to this point has been replaced by the following briefing.\n\n" +
		strings.TrimSpace(briefing) + "\n\n[End of briefing. The user's latest message follows.]"
}

func orNothing(s string) string {
	if s = strings.TrimSpace(s); s == "" {
		return "(nothing)"
	}
	return s
}

// Texts replace the fixed texts the AC3 operators put into a context with
// users' templates; a nil field keeps ours. Each is parsed and checked with
// prompt.ParseFile against its TextSpecs entry, and its version goes into
// the versions of the operators that use it.
type Texts struct {
	// Reset fills the ac3 reset template (ResetText): .Spec and .Aligned.
	Reset *prompt.Template
	// Augment is the note augment appends after u_t (AugmentText): .Spec,
	// .Aligned and .Issues.
	Augment *prompt.Template
	// RewriteFrame frames the ac3 rewrite's briefing (RewriteText):
	// .Briefing.
	RewriteFrame *prompt.Template
}

// The data the texts are rendered with.
type (
	resetData struct {
		Spec, Aligned string
	}
	augmentData struct {
		Spec, Aligned, Issues string
	}
	frameData struct {
		Briefing string
	}
)

// TextSpecs declares the operators' texts for users' templates (Texts;
// stages.curate.prompts reset, augment and rewrite_frame in the config).
// Each renders to one user message, the text placed in the context; none
// has an answer's form, since no model answers it.
func TextSpecs() []prompt.Spec {
	return []prompt.Spec{
		{Name: "reset", Data: reflect.TypeFor[resetData](), Needs: []string{"Spec"}, UserOnly: true},
		{Name: "augment", Data: reflect.TypeFor[augmentData](), Needs: []string{"Spec"}, UserOnly: true},
		{Name: "rewrite_frame", Data: reflect.TypeFor[frameData](), Needs: []string{"Briefing"}, UserOnly: true},
	}
}

// check refuses a text given for the wrong slot, or for a form that does
// not use it (the wildchat reset and the paper's rewrite bring their own).
func (x Texts) check(f form) error {
	for _, s := range []struct {
		t    *prompt.Template
		name string
	}{{x.Reset, "reset"}, {x.Augment, "augment"}, {x.RewriteFrame, "rewrite_frame"}} {
		if s.t != nil && s.t.Name() != s.name {
			return fmt.Errorf("the %s text was given a template for %s", s.name, s.t.Name())
		}
	}
	if x.Reset != nil && f.reset != ResetAC3 {
		return fmt.Errorf("a reset text replaces the %s reset template's; reset_template %s has texts of its own", ResetAC3, f.reset)
	}
	if x.RewriteFrame != nil && f.rewrite != analyze.RewriteAC3 {
		return fmt.Errorf("a rewrite frame frames the %s rewrite's briefing; rewrite_variant %s has no frame", analyze.RewriteAC3, f.rewrite)
	}
	return nil
}

// render renders a user's text template to the text it puts in a context.
func render(t *prompt.Template, data any) (string, error) {
	msgs, err := t.Render(data)
	if err != nil {
		return "", err
	}
	return msgs[len(msgs)-1].Content, nil
}

// resetText is ResetText, or the user's reset text.
func (f form) resetText(a analyze.Analysis) (string, error) {
	if f.texts.Reset == nil {
		return ResetText(a.Spec, a.Aligned), nil
	}
	return render(f.texts.Reset, resetData{Spec: a.Spec, Aligned: a.Aligned})
}

// augmentText is AugmentText, or the user's augment text.
func (f form) augmentText(a analyze.Analysis) (string, error) {
	if f.texts.Augment == nil {
		return AugmentText(a), nil
	}
	return render(f.texts.Augment, augmentData{Spec: a.Spec, Aligned: a.Aligned, Issues: a.Issues})
}

// rewriteText is RewriteText, or the user's frame.
func (f form) rewriteText(briefing string) (string, error) {
	if f.texts.RewriteFrame == nil {
		return RewriteText(briefing), nil
	}
	return render(f.texts.RewriteFrame, frameData{Briefing: briefing})
}

// textVersion is what a replaced text adds to op's version: nothing when
// op uses none.
func (f form) textVersion(op string) string {
	var t *prompt.Template
	switch {
	case op == curated.OpAugment:
		t = f.texts.Augment
	case op == curated.OpRewrite && f.rewrite == analyze.RewriteAC3:
		t = f.texts.RewriteFrame
	case (op == curated.OpReset || op == curated.OpGatedReset) && f.reset == ResetAC3:
		t = f.texts.Reset
	}
	if t == nil {
		return ""
	}
	return ";text=" + t.Version()
}
