package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ac3/ac3/judge"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/progress"
	"github.com/ac3/ac3/pipeline/tokens"
	"github.com/ac3/ac3/stages/analyze"
	"github.com/ac3/ac3/stages/curate"
)

// policyJudgeStage is the stage whose units hold pairwise verdicts.
const policyJudgeStage = "judge"

const policyNeeds = `ac3 policy fit needs this run's own pairwise judgments of fc against ao:
  1. curate fc and ao:          ac3 curate --db RUN --strategies fc,ao
  2. generate and judge them:   the judge stage with the pair fc:ao (or ao:fc)
     (stages.judge.pairs in the config); the quality outcome of each judged
     turn is the label (a tie counts half to each side)
  3. optionally classify turns (turn type and references become features)
It then fits P(fc wins) by logistic regression on: round, log tokens of the fc
and ao contexts and of the assistant history, the assistant share of the
context, the turn type, and whether the turn refers back (to an assistant turn
in particular). At least %d judged turns are needed.`

func policyCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "policy",
		Usage: "the adaptive strategy's scored policy",
		Subcommands: []*cli.Command{{
			Name:  "fit",
			Usage: "fit P(fc wins over ao) on this run's judge results, for 'adaptive' with policy scored",
			Description: fmt.Sprintf(policyNeeds, curate.MinPolicyExamples) + `

The fitted policy is stored in the run; 'ac3 curate --strategies adaptive
--adaptive-policy scored --lambda L --tau T' then keeps fc on a turn iff
P(fc wins) − L·Δ ≥ T, Δ being the turn's assistant-history tokens over their
mean in the fitted data. Refitting changes the policy's hash, so adaptive
curates again.

Example:
   ac3 policy fit --db run.db`,
			Flags: []cli.Flag{dbFlag, &cli.StringFlag{Name: "encoding", Value: tokens.DefaultEncoding, Usage: "tokenizer for the token features (use the one curate used)"}},
			Action: func(c *cli.Context) error {
				l, err := openRun(c.Context, c, false)
				if err != nil {
					return err
				}
				defer l.Close()
				counter, err := tokens.New(c.String("encoding"))
				if err != nil {
					return err
				}
				return fitPolicy(c.Context, e, l, counter)
			},
		}},
	}
}

// judgedTurn is one fc-vs-ao verdict.
type judgedTurn struct {
	conv   string
	turn   int
	fcWins float64
}

func fitPolicy(ctx context.Context, e *env, l *ledger.Ledger, counter *tokens.Counter) error {
	plans, err := l.Plans(ctx)
	if err != nil {
		return err
	}
	var judged []judgedTurn
	for _, v := range plans[policyJudgeStage] {
		pair, ok := fcAOPair(v.Name)
		if !ok {
			continue
		}
		err := l.Units(ctx, policyJudgeStage, []ledger.Variant{v}, 0, 1<<62, func(u ledger.Unit) error {
			if u.Status != ledger.Done {
				return nil
			}
			if w, ok := fcWins(pair, u.Output); ok {
				judged = append(judged, judgedTurn{u.ConvID, u.Turn, w})
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if len(judged) < curate.MinPolicyExamples {
		return fmt.Errorf("found %d judged fc-vs-ao turns in %s.\n%s", len(judged), l.Path(), fmt.Sprintf(policyNeeds, curate.MinPolicyExamples))
	}
	classify, _ := upstream(plans, curate.ClassifyStage, "")
	var ex []curate.PolicyExample
	convs := map[string]*conv.Conversation{}
	caches := map[string]*curate.TokenCache{}
	for _, j := range judged {
		c, ok := convs[j.conv]
		if !ok {
			s, found, err := l.Conversation(ctx, j.conv)
			if err != nil {
				return err
			}
			if !found {
				continue
			}
			c = s.Conv
			convs[j.conv], caches[j.conv] = c, curate.NewTokenCache(c, counter)
		}
		var cls []byte
		if classify.Variant != "" {
			us, err := l.ConversationUnits(ctx, curate.ClassifyStage, j.conv, j.turn)
			if err != nil {
				return err
			}
			for _, u := range us {
				if u.Variant == classify.Variant && u.Version == classify.Version && u.Status == ledger.Done {
					cls = u.Output
				}
			}
		}
		f, err := curate.FeaturesOf(ctx, c, j.turn, caches[j.conv], cls)
		if err != nil {
			continue
		}
		ex = append(ex, curate.PolicyExample{TurnFeatures: f, FCWins: j.fcWins})
	}
	p, err := curate.FitPolicy(ex)
	if err != nil {
		return err
	}
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	if err := l.SetMeta(ctx, metaPolicy, string(b)); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "policy %s fitted on %d judged turns (fc won %.1f%%; training accuracy %.1f%%; mean assistant history %.0f tokens)\n",
		p.Hash(), p.N, 100*p.FCWinRate, 100*p.TrainAccuracy, p.MeanAsstTokens)
	fmt.Fprintf(e.stdout, "  %-16s %+.3f\n", "(bias)", p.Weights[0])
	for i, f := range p.Features {
		fmt.Fprintf(e.stdout, "  %-16s %+.3f\n", f, p.Weights[i+1])
	}
	if classify.Variant == "" {
		fmt.Fprintln(e.stdout, "  (no classify stage in this run: turn-type and reference features were zero)")
	}
	fmt.Fprintln(e.stdout, "use it with: ac3 curate --strategies adaptive --adaptive-policy scored [--lambda L --tau T]")
	return nil
}

// fcAOPair reads a judge variant name such as "fc:ao", "ao:fc" or
// "fc:ao/user_only".
func fcAOPair(name string) ([2]string, bool) {
	name, _, _ = strings.Cut(name, "/")
	p, err := judge.ParsePair(name)
	if err != nil {
		return [2]string{}, false
	}
	pr := [2]string{p.A, p.B}
	return pr, (pr[0] == "fc" && pr[1] == "ao") || (pr[0] == "ao" && pr[1] == "fc")
}

// fcWins reads a judge unit's quality outcomes (in strategy terms, both
// orders already combined) as the share fc won, ties counting half; several
// samples are averaged.
func fcWins(pair [2]string, out []byte) (float64, bool) {
	o, err := judge.Decode(out)
	if err != nil {
		return 0, false
	}
	var sum float64
	n := 0
	for _, cmp := range o.Comparisons {
		w := ""
		switch strings.ToLower(cmp.Outcome[judge.Quality]) {
		case "a":
			w = pair[0]
		case "b":
			w = pair[1]
		case "tie":
			w = "tie"
		default:
			continue
		}
		n++
		switch w {
		case "fc":
			sum++
		case "tie":
			sum += 0.5
		}
	}
	if n == 0 {
		return 0, false
	}
	return sum / float64(n), true
}

func memoryCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "memory",
		Usage: "the optional AC3 memory (a cheatsheet given to the analysis)",
		Subcommands: []*cli.Command{memoryShowCommand(e), {
			Name:  "learn",
			Usage: "learn the cheatsheet on a split of the run, then freeze it (offline regime)",
			Description: `Goes through the first --conversations conversations of the run in ingest
order. For each it analyzes every turn from --from-turn on (step 2 given the
cheatsheet so far), asks the analyzer model for transferable takeaways from
those analyses, and merges them into one plain-text cheatsheet of at most 1,500
words. The final cheatsheet is frozen and stored in the run with its hash;
'ac3 curate --memory offline' gives it to step 2 of every analysis, and the
hash enters the operators' unit keys, so learning again re-curates them.

The order is fixed, every request depends only on the conversation and the
cheatsheet before it, and answers are cached in the run, so an interrupted
learn replays what it did at no cost. Evaluate on conversations outside the
split (they are the ones after it in ingest order). For the online regime,
where the cheatsheet is updated after each conversation as curation proceeds,
use 'ac3 curate --memory online' instead (no learn step).

Example:
   ac3 memory learn --db run.db --conversations 300`,
			Flags: append([]cli.Flag{
				dbFlag,
				&cli.IntFlag{Name: "conversations", Usage: "size of the learning split: the first N conversations (default: a third of the run)"},
				&cli.IntFlag{Name: "from-turn", Value: curate.DefaultFrom, Usage: "first user turn analyzed"},
				&cli.BoolFlag{Name: "again", Usage: "learn even if this run already has a cheatsheet for the same split"},
			}, llmFlags()...),
			Action: func(c *cli.Context) error {
				s, err := llmSettingsFrom(c, e)
				if err != nil {
					return err
				}
				l, err := openRun(c.Context, c, false)
				if err != nil {
					return err
				}
				defer l.Close()
				return learnMemory(c.Context, e, l, s, c.Int("conversations"), c.Int("from-turn"), c.Bool("again"))
			},
		}},
	}
}

func learnMemory(ctx context.Context, e *env, l *ledger.Ledger, s llmSettings, n, from int, again bool) error {
	total, err := l.CountConversations(ctx)
	if err != nil {
		return err
	}
	if n <= 0 {
		n = int(max(1, total/3))
	}
	r, err := newLLM(ctx, e, l, s, nil)
	if errors.Is(err, ErrNoEndpoint) {
		fmt.Fprintf(e.stdout, "memory learn: skipped: %v\n", err)
		return nil
	}
	if err != nil {
		return err
	}
	an, err := analyze.New(r.client, analyze.Options{})
	if err != nil {
		return err
	}
	if raw, ok, err := l.Meta(ctx, metaMemoryOffline); err != nil {
		return err
	} else if ok && !again {
		var rec memoryRecord
		if json.Unmarshal([]byte(raw), &rec) == nil && rec.Conversations == n && rec.Analyzer == an.Version()+";"+an.MemoryVersion() {
			fmt.Fprintf(e.stdout, "memory learn: this run already has cheatsheet %s learned on its first %d conversations (--again to learn it anew)\n", rec.Hash, n)
			return nil
		}
	}
	m := progress.Start(e.stderr, "memory", "conversations", int64(min(int64(n), total)))
	defer m.Stop()
	var (
		sheet   string
		use     analyze.Usage
		done    int
		lastSeq int64
		after   int64
	)
	for done < n {
		page, err := l.ConversationPage(ctx, after, min(256, n-done))
		if err != nil {
			return err
		}
		if len(page) == 0 {
			break
		}
		for _, sc := range page {
			next, u, err := an.Learn(ctx, sc.Conv, from, sheet)
			use.Add(u)
			m.AddCost(u.CostUSD)
			if errors.Is(err, llm.ErrBudgetExceeded) {
				fmt.Fprintf(e.stdout, "memory learn: stopped at conversation %d of %d: %v; nothing stored; run again with a higher --budget-usd (answers so far are cached)\n", done+1, n, err)
				return nil
			}
			if _, failed := analyze.Failure(err); failed {
				// A conversation the analyzer could not read teaches nothing;
				// the order (and so the result) stays deterministic.
				fmt.Fprintf(e.stderr, "memory learn: skipping conversation %s: %v\n", sc.Conv.ID, err)
				next, err = sheet, nil
			}
			if err != nil {
				return fmt.Errorf("learning from conversation %s: %w", sc.Conv.ID, err)
			}
			sheet = next
			done++
			lastSeq = sc.Seq
			m.Add(1, 0)
		}
		after = page[len(page)-1].Seq
	}
	rec := memoryRecord{Cheatsheet: sheet, Hash: analyze.MemoryHash(sheet), Conversations: n, LastSeq: lastSeq,
		Analyzer: an.Version() + ";" + an.MemoryVersion(), CostUSD: use.CostUSD}
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if err := l.SetMeta(ctx, metaMemoryOffline, string(b)); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "memory learn: cheatsheet %s (%d words) learned on %d conversations (up to seq %d) with %d calls ($%.4f); use it with 'ac3 curate --memory offline'\n",
		rec.Hash, len(strings.Fields(sheet)), done, lastSeq, use.Calls, use.CostUSD)
	return nil
}

func memoryShowCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "show",
		Usage: "show the run's cheatsheets: the offline one and the online versions",
		Description: `Prints the frozen cheatsheet of the offline regime ('ac3 memory learn'), if
any, and for each online chain ('ac3 curate --memory online') where it stands:
the last conversation learned from and the cheatsheet after it. With
--conversation, the online step of that conversation: the cheatsheet its step
2 was given (built from the conversations before it), the takeaways it gave,
and the cheatsheet after it. --text prints the cheatsheets themselves.

Examples:
   ac3 memory show --db run.db
   ac3 memory show --db run.db --conversation conv-42 --text`,
		Flags: []cli.Flag{
			dbFlag,
			&cli.StringFlag{Name: "conversation", Usage: "show the online step of this conversation"},
			&cli.BoolFlag{Name: "text", Usage: "print the cheatsheets' text"},
		},
		Action: func(c *cli.Context) error {
			l, err := openRun(c.Context, c, true)
			if err != nil {
				return err
			}
			defer l.Close()
			return showMemory(c.Context, e, l, c.String("conversation"), c.Bool("text"))
		},
	}
}

func showMemory(ctx context.Context, e *env, l *ledger.Ledger, convID string, text bool) error {
	w := e.stdout
	printText := func(s string) {
		if text {
			for line := range strings.SplitSeq(strings.TrimSpace(s), "\n") {
				fmt.Fprintf(w, "    | %s\n", line)
			}
		}
	}
	found := false
	if raw, ok, err := l.Meta(ctx, metaMemoryOffline); err != nil {
		return err
	} else if ok {
		var rec memoryRecord
		if err := json.Unmarshal([]byte(raw), &rec); err != nil {
			return fmt.Errorf("reading the stored cheatsheet: %w", err)
		}
		found = true
		fmt.Fprintf(w, "offline: cheatsheet %s (%d words), learned on the first %d conversations (up to seq %d), $%.4f\n",
			rec.Hash, len(strings.Fields(rec.Cheatsheet)), rec.Conversations, rec.LastSeq, rec.CostUSD)
		printText(rec.Cheatsheet)
	}
	chains, err := curate.OnlineChains(ctx, l)
	if err != nil {
		return err
	}
	var seq int64
	if convID != "" {
		sc, ok, err := l.Conversation(ctx, convID)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("showing memory: no conversation %q in %s", convID, l.Path())
		}
		seq = sc.Seq
	}
	for _, ch := range chains {
		hseq, hash, ok, err := curate.OnlineHead(ctx, l, ch.ID)
		if err != nil {
			return err
		}
		found = true
		fmt.Fprintf(w, "online %s (from turn %d; %s; %s):\n", ch.ID, ch.From, ch.Analyzer, ch.Memory)
		if !ok {
			fmt.Fprintln(w, "  no conversation learned from yet")
			continue
		}
		head, _, err := curate.OnlineStepAt(ctx, l, ch.ID, hseq)
		if err != nil {
			return err
		}
		sheet, err := curate.OnlineCheatsheet(ctx, l, ch.ID, hash)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "  last learned from %s (seq %d): cheatsheet %s (%d words)\n", head.Conv, hseq, orNone(hash), len(strings.Fields(sheet)))
		if convID == "" {
			printText(sheet)
			continue
		}
		st, ok, err := curate.OnlineStepAt(ctx, l, ch.ID, seq)
		if err != nil {
			return err
		}
		if !ok {
			fmt.Fprintf(w, "  %s (seq %d): not learned from yet\n", convID, seq)
			continue
		}
		before, err := curate.OnlineCheatsheet(ctx, l, ch.ID, st.Before)
		if err != nil {
			return err
		}
		after, err := curate.OnlineCheatsheet(ctx, l, ch.ID, st.After)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "  %s (seq %d): step 2 was given cheatsheet %s (after seq %d)\n", convID, seq, orNone(st.Before), st.Prev)
		printText(before)
		fmt.Fprintf(w, "  learned from %d turns with %d calls ($%.4f)", st.Turns, st.Usage.Calls, st.Usage.CostUSD)
		if st.Skipped != "" {
			fmt.Fprintf(w, "; taught nothing: %s", st.Skipped)
		}
		fmt.Fprintln(w)
		if st.Takeaways != "" {
			fmt.Fprintln(w, "  takeaways:")
			for line := range strings.SplitSeq(strings.TrimSpace(st.Takeaways), "\n") {
				fmt.Fprintf(w, "    %s\n", line)
			}
		}
		fmt.Fprintf(w, "  cheatsheet after it: %s (%d words)\n", orNone(st.After), st.Words)
		printText(after)
	}
	if !found {
		fmt.Fprintln(w, "this run has no cheatsheet: learn one with 'ac3 memory learn' (offline) or curate with --memory online")
	}
	return nil
}

func orNone(hash string) string {
	if hash == "" {
		return "(empty)"
	}
	return hash
}
