package analyze

import (
	"context"
	"fmt"
	"strings"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/llm/parse"
)

// Rewrite is the rewrite operator's extra call: a compact replacement for
// the conversation before u_t, written from the analysis and C_t. Only the
// text inside the answer's nonce-tagged context section is returned;
// anything around it (preambles, a drafted answer) is dropped.
func (a *Analyzer) Rewrite(ctx context.Context, an Analysis, ct []conv.Message, reroll int) (string, Usage, error) {
	var use Usage
	tr := Transcript(ct)
	tg := parse.NewTagger(tr, an.Spec, an.Aligned, an.Issues)
	data := struct {
		Transcript, Spec, Aligned, Issues string
		T                                 parse.Tagger
	}{tr, an.Spec, an.Aligned, an.Issues, tg}
	out, err := a.call(ctx, "curate", a.p.rewrite, data, tg, reroll, &use, "context")
	if err != nil {
		return "", use, fmt.Errorf("rewriting the context: %w", err)
	}
	return out["context"], use, nil
}

// Summarize is the sum strategy's call: one sentence for one assistant
// reply. Its request holds only the reply and the user message it answers,
// never the turn being curated, so every later turn of the conversation
// makes the identical request and the run's cache answers it once.
func (a *Analyzer) Summarize(ctx context.Context, user, reply string, reroll int) (string, Usage, error) {
	var use Usage
	tg := parse.NewTagger(user, reply)
	data := struct {
		User, Reply string
		T           parse.Tagger
	}{user, reply, tg}
	out, err := a.call(ctx, "curate", a.p.summary, data, tg, reroll, &use, "summary")
	if err != nil {
		return "", use, fmt.Errorf("summarizing a reply: %w", err)
	}
	return strings.Join(strings.Fields(out["summary"]), " "), use, nil
}

// TurnAnalysis is one analyzed turn of a conversation, as the memory's
// reflection reads it.
type TurnAnalysis struct {
	Turn int
	Analysis
}

// Reflect turns one conversation's analysis trajectory into transferable
// takeaways, given the current cheatsheet ("" when there is none).
func (a *Analyzer) Reflect(ctx context.Context, turns []TurnAnalysis, cheatsheet string) (string, Usage, error) {
	var use Usage
	parts := []string{cheatsheet}
	for _, t := range turns {
		parts = append(parts, t.Spec, t.Aligned, t.Issues)
	}
	tg := parse.NewTagger(parts...)
	data := struct {
		Turns      []TurnAnalysis
		Cheatsheet string
		T          parse.Tagger
	}{turns, cheatsheet, tg}
	out, err := a.call(ctx, "memory", a.p.reflect, data, tg, 0, &use, "takeaways")
	if err != nil {
		return "", use, fmt.Errorf("reflecting on a conversation: %w", err)
	}
	return out["takeaways"], use, nil
}

// MaxCheatsheetWords caps the memory cheatsheet.
const MaxCheatsheetWords = 1500

// Unify merges takeaways into the cheatsheet and returns the new one,
// capped at MaxCheatsheetWords words (a longer answer is cut at the cap, so
// the prompt given to step 2 stays bounded whatever the model writes).
func (a *Analyzer) Unify(ctx context.Context, cheatsheet, takeaways string) (string, Usage, error) {
	var use Usage
	tg := parse.NewTagger(cheatsheet, takeaways)
	data := struct {
		Cheatsheet, Takeaways string
		MaxWords              int
		T                     parse.Tagger
	}{cheatsheet, takeaways, MaxCheatsheetWords, tg}
	out, err := a.call(ctx, "memory", a.p.unify, data, tg, 0, &use, "cheatsheet")
	if err != nil {
		return "", use, fmt.Errorf("unifying the cheatsheet: %w", err)
	}
	return CapWords(out["cheatsheet"], MaxCheatsheetWords), use, nil
}

// CapWords keeps the first n words of s, keeping its line breaks.
func CapWords(s string, n int) string {
	count := 0
	in := false
	for i, r := range s {
		space := r == ' ' || r == '\n' || r == '\t' || r == '\r'
		if !space && !in {
			count++
			if count > n {
				return strings.TrimSpace(s[:i])
			}
		}
		in = !space
	}
	return strings.TrimSpace(s)
}
