package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"
	"gopkg.in/yaml.v3"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/stages/classify"
	"github.com/ac3/ac3/stages/constraints"
	"github.com/ac3/ac3/stages/pollution"
)

// annotateArgs says which annotation stages run and with which annotator
// ("" = the stage does not run).
type annotateArgs struct {
	classify    string // heuristic | llm
	constraints string // heuristic | llm
	pollution   bool   // model only
	workers     int
	llm         llmSettings
}

func (a annotateArgs) needsModel() bool {
	return a.classify == "llm" || a.constraints == "llm" || a.pollution
}

func (a annotateArgs) describe() string {
	var parts []string
	if a.classify != "" {
		parts = append(parts, "classify+refs:"+a.classify)
	}
	if a.constraints != "" {
		parts = append(parts, "constraints:"+a.constraints)
	}
	if a.pollution {
		parts = append(parts, "pollution:llm")
	}
	return strings.Join(parts, ", ")
}

func annotateCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "annotate",
		Usage: "label user turns, find session constraints, review replies for pollution",
		Description: `Runs annotation stages over every kept conversation, resumably:

   classify     for each user turn t >= 2: new_ask, feedback or no_feedback, with a
                confidence, a one-line reason and the earlier turns it refers to
                ("1a" = the previous assistant reply, "2u" = the user message two
                rounds back; none = self-contained)
   constraints  for each user turn: the session constraints it sets ("from now on,
                reply in bullets") and the registry in force as of that turn
   pollution    for each assistant reply from round 2 on: does it carry over an
                earlier mistake (intent override, code, hallucinated fact, reasoning,
                formula carryover), from which turns

--annotator chooses who labels classify and constraints: "heuristic" (rules on
lexical cues and scope phrases; needs no model, costs nothing) or "llm" (the
role "annotator" of the configured endpoint). Pollution has no rule-based
annotator and always uses the model. When a model is needed and no endpoint is
configured, that stage is skipped with one line saying what to set; nothing is
faked. Failed units (malformed answers after retries) keep the raw answer;
'ac3 retry --stage NAME' runs them again.

Examples:
   ac3 annotate --db run.db                                    # classify + constraints, rules only
   ac3 annotate --db run.db --stages classify,constraints,pollution --annotator llm --config run.yaml
   OPENAI_BASE_URL=http://127.0.0.1:8000/v1 OPENAI_MODEL=qwen3-8b ac3 annotate --db run.db --annotator llm --budget-usd 5
   ac3 annotate --db run.db --stages pollution --dry-run --config run.yaml
   ac3 eval-heuristics                                         # how good are the rules?`,
		Flags: append([]cli.Flag{
			dbFlag,
			&cli.StringFlag{Name: "stages", Value: "classify,constraints", Usage: "comma-separated: classify, constraints, pollution (refs come with classify)"},
			&cli.StringFlag{Name: "annotator", Value: "heuristic", Usage: "heuristic | llm, for classify and constraints"},
			&cli.IntFlag{Name: "workers", Value: 4, Usage: "conversations annotated in parallel"},
			&cli.BoolFlag{Name: "dry-run", Usage: "print the planned model calls and an estimated cost, change nothing"},
		}, llmFlags()...),
		Action: func(c *cli.Context) error {
			a, err := annotateArgsFromFlags(c, e)
			if err != nil {
				return err
			}
			if c.Bool("dry-run") {
				l, err := openRun(c.Context, c, true)
				if err != nil {
					return err
				}
				defer l.Close()
				return dryRunAnnotateArgs(c.Context, e.stdout, l, a, e.getenv)
			}
			l, err := openRun(c.Context, c, false)
			if err != nil {
				return err
			}
			defer l.Close()
			_, err = runAnnotate(c.Context, e, l, a)
			return err
		},
	}
}

func annotateArgsFromFlags(c *cli.Context, e *env) (annotateArgs, error) {
	a := annotateArgs{workers: c.Int("workers")}
	ann := c.String("annotator")
	if ann != "heuristic" && ann != "llm" {
		return a, fmt.Errorf("--annotator %q: want heuristic or llm", ann)
	}
	for _, s := range splitList([]string{c.String("stages")}) {
		switch s {
		case "classify", "refs":
			a.classify = ann
		case "constraints":
			a.constraints = ann
		case "pollution":
			a.pollution = true
		default:
			return a, fmt.Errorf("--stages: unknown stage %q (want classify, constraints, pollution)", s)
		}
	}
	var err error
	a.llm, err = llmSettingsFrom(c, e)
	return a, err
}

// stageSection is the config shape of stages.classify, stages.refs and
// stages.constraints.
type stageSection struct {
	Annotator string `yaml:"annotator"`
}

// pollutionSection is the config shape of stages.pollution.
type pollutionSection struct {
	On []string `yaml:"on"`
}

// annotateNode returns a stage section's node, or nil when the section is
// absent. It takes the field by value or by pointer: yaml.v3 with
// KnownFields rejects the keys of a *yaml.Node field, so config.go is
// expected to hold the sections as yaml.Node values.
func annotateNode(v any) *yaml.Node {
	switch n := v.(type) {
	case *yaml.Node:
		return n
	case yaml.Node:
		if n.Kind == 0 {
			return nil
		}
		return &n
	}
	return nil
}

func decodeSection(n *yaml.Node, path string, v any) error {
	if err := n.Decode(v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func checkAnnotator(path, s string) (string, error) {
	switch s {
	case "":
		return "heuristic", nil // the default needs no model
	case "heuristic", "llm":
		return s, nil
	}
	return "", fmt.Errorf("%s.annotator: %q, want llm or heuristic", path, s)
}

// annotateFromConfig reads stages.classify, stages.refs, stages.constraints
// and stages.pollution. Refs share the classify call, so a refs section
// alone runs classify, and one beside classify must name the same annotator.
func annotateFromConfig(cfg *config) (annotateArgs, []string, error) {
	a := annotateArgs{workers: cfg.Run.Workers, llm: llmSettings{cfg: cfg, budgetUSD: cfg.Run.BudgetUSD}}
	var notes []string
	st := cfg.Stages
	if n := annotateNode(st.Classify); n != nil {
		var s stageSection
		if err := decodeSection(n, "stages.classify", &s); err != nil {
			return a, nil, err
		}
		var err error
		if a.classify, err = checkAnnotator("stages.classify", s.Annotator); err != nil {
			return a, nil, err
		}
	}
	if n := annotateNode(st.Refs); n != nil {
		var s stageSection
		if err := decodeSection(n, "stages.refs", &s); err != nil {
			return a, nil, err
		}
		ann, err := checkAnnotator("stages.refs", s.Annotator)
		if err != nil {
			return a, nil, err
		}
		if a.classify != "" && a.classify != ann {
			return a, nil, fmt.Errorf("stages.refs.annotator: %q, but refs come from the classify call, which uses %q; make them the same", ann, a.classify)
		}
		a.classify = ann
	}
	if n := annotateNode(st.Constraints); n != nil {
		var s stageSection
		if err := decodeSection(n, "stages.constraints", &s); err != nil {
			return a, nil, err
		}
		var err error
		if a.constraints, err = checkAnnotator("stages.constraints", s.Annotator); err != nil {
			return a, nil, err
		}
	}
	if n := annotateNode(st.Pollution); n != nil {
		var s pollutionSection
		if err := decodeSection(n, "stages.pollution", &s); err != nil {
			return a, nil, err
		}
		if len(s.On) == 0 {
			s.On = []string{"dataset"}
		}
		for _, on := range s.On {
			switch on {
			case "dataset":
				a.pollution = true
			case "generated":
				notes = append(notes, "pollution on generated replies is reviewed when they are generated (the respond stage), not here")
			default:
				return a, nil, fmt.Errorf("stages.pollution.on: %q, want dataset or generated", on)
			}
		}
	}
	return a, notes, nil
}

// runAnnotateFromConfig runs the annotation stages a config lists, in order
// classify → constraints → pollution. It reports false when the run was
// stopped before the end (Ctrl-C, the budget).
func runAnnotateFromConfig(ctx context.Context, e *env, l *ledger.Ledger, cfg *config) (bool, error) {
	a, notes, err := annotateFromConfig(cfg)
	if err != nil {
		return false, err
	}
	for _, n := range notes {
		fmt.Fprintln(e.stdout, "annotate: "+n)
	}
	if a.classify == "" && a.constraints == "" && !a.pollution {
		return true, nil
	}
	fmt.Fprintf(e.stdout, "== annotate (%s)\n", a.describe())
	return runAnnotate(ctx, e, l, a)
}

// annotateStage is one planned stage: its display name and how to build it
// (nil when a model is needed and none is configured).
type annotateStage struct {
	label string
	model bool
	build func(client *llm.Client) (pipeline.Stage, error)
}

func (a annotateArgs) plan() []annotateStage {
	var out []annotateStage
	if a.classify != "" {
		ann := a.classify
		out = append(out, annotateStage{label: "classify (" + ann + ")", model: ann == "llm", build: func(cl *llm.Client) (pipeline.Stage, error) {
			o := classify.Options{Heuristic: ann == "heuristic"}
			if ann == "llm" {
				o.LLM = &classify.LLM{Client: cl}
			}
			return classify.NewStage(o)
		}})
	}
	if a.constraints != "" {
		ann := a.constraints
		out = append(out, annotateStage{label: "constraints (" + ann + ")", model: ann == "llm", build: func(cl *llm.Client) (pipeline.Stage, error) {
			o := constraints.Options{Heuristic: ann == "heuristic"}
			if ann == "llm" {
				o.LLM = &constraints.LLM{Client: cl}
			}
			return constraints.NewStage(o)
		}})
	}
	if a.pollution {
		out = append(out, annotateStage{label: "pollution (llm)", model: true, build: func(cl *llm.Client) (pipeline.Stage, error) {
			return pollution.NewStage(&pollution.LLM{Client: cl})
		}})
	}
	return out
}

// runAnnotate runs the chosen stages in order. Stages that need a model are
// skipped with one line when no endpoint is configured. It reports false
// when a stage stopped before the end.
func runAnnotate(ctx context.Context, e *env, l *ledger.Ledger, a annotateArgs) (bool, error) {
	var client *llm.Client
	var noModel error
	if a.needsModel() {
		r, err := newLLM(ctx, e, l, a.llm, nil)
		switch {
		case errors.Is(err, ErrNoEndpoint):
			noModel = err
		case err != nil:
			return false, err
		default:
			client = r.client
		}
	}
	var skipped []string
	for _, p := range a.plan() {
		if p.model && client == nil {
			skipped = append(skipped, p.label)
		}
	}
	if len(skipped) > 0 {
		fmt.Fprintf(e.stdout, "%s: skipped, %v\n", strings.Join(skipped, ", "), noModel)
	}
	for _, p := range a.plan() {
		if p.model && client == nil {
			continue
		}
		st, err := p.build(client)
		if err != nil {
			return false, err
		}
		done, err := runStage(ctx, e, l, p.label, st, a.workers, true)
		if err != nil || !done {
			return false, err
		}
	}
	return true, nil
}

// dryRunAnnotate prints, for the annotation stages cfg lists, how many
// conversations are pending, how many model calls that means per role, and
// an estimated cost from the configured prices (prompts rendered for a
// sample of conversations, extrapolated). l may be nil when the run does
// not exist yet.
func dryRunAnnotate(ctx context.Context, w io.Writer, l *ledger.Ledger, cfg *config) error {
	a, notes, err := annotateFromConfig(cfg)
	if err != nil {
		return err
	}
	if a.classify == "" && a.constraints == "" && !a.pollution {
		return nil
	}
	for _, n := range notes {
		fmt.Fprintln(w, "   "+n)
	}
	// Prices and models come from the config; keys are not needed to
	// estimate, so the environment is not read.
	return dryRunAnnotateArgs(ctx, w, l, a, func(string) string { return "" })
}

// sampleConvs is how many pending conversations per stage have their
// prompts rendered to estimate tokens.
const sampleConvs = 25

func dryRunAnnotateArgs(ctx context.Context, w io.Writer, l *ledger.Ledger, a annotateArgs, getenv func(string) string) error {
	fmt.Fprintf(w, "annotate (%s)\n", a.describe())
	var client *llm.Client
	if a.needsModel() {
		if opts, err := llmOptions(a.llm.cfg, getenv); err == nil {
			client, _ = llm.New(opts)
		}
		if client == nil {
			fmt.Fprintln(w, "   no model endpoint configured: stages that need a model will be skipped")
		}
	}
	if l == nil {
		fmt.Fprintln(w, "   (the run does not exist yet: every ingested conversation will be annotated)")
		return nil
	}
	var totalCalls int64
	var totalUSD float64
	priced := true
	for _, p := range a.plan() {
		if p.model && client == nil {
			fmt.Fprintf(w, "   %-22s skipped (no endpoint)\n", p.label)
			continue
		}
		st, err := p.build(client)
		if err != nil {
			return err
		}
		est, err := estimateStage(ctx, l, st, client)
		if err != nil {
			return err
		}
		if !p.model {
			fmt.Fprintf(w, "   %-22s %d conversations pending, %d turns, no model calls\n", p.label, est.convs, est.calls)
			continue
		}
		usd, err := client.EstimateCost(est.role, int(est.promptTk), int(est.complTk))
		if err != nil {
			return err
		}
		if usd == 0 && est.calls > 0 {
			priced = false
		}
		totalCalls += est.calls
		totalUSD += usd
		fmt.Fprintf(w, "   %-22s %d conversations pending, %d calls for role %s, ~%s prompt + %s completion tokens, ~$%.2f\n",
			p.label, est.convs, est.calls, est.role, humanTokens(est.promptTk), humanTokens(est.complTk), usd)
	}
	if totalCalls > 0 {
		note := ""
		if !priced {
			note = " (no price configured for the model: set models.<name>.price)"
		}
		fmt.Fprintf(w, "   model calls: annotator %d; estimated cost $%.2f%s\n", totalCalls, totalUSD, note)
	}
	return nil
}

type stageEstimate struct {
	role              string
	convs, calls      int64
	promptTk, complTk int64
}

// estimateStage counts the pending conversations and calls of st and
// estimates tokens from the prompts of the first sampleConvs pending
// conversations, scaled to all calls.
func estimateStage(ctx context.Context, l *ledger.Ledger, st pipeline.Stage, client *llm.Client) (stageEstimate, error) {
	est := stageEstimate{role: "annotator"}
	lv := toLedger(st.Variants())
	var sampledCalls, sampledTk int64
	var compl int64
	var after int64
	for {
		page, err := l.ConversationPage(ctx, after, 512)
		if err != nil {
			return est, err
		}
		if len(page) == 0 {
			break
		}
		upto := page[len(page)-1].Seq
		states, err := l.TaskStates(ctx, st.Name(), lv, after, upto)
		if err != nil {
			return est, err
		}
		for _, sc := range page {
			for _, v := range lv {
				if _, seen := states[ledger.TaskID{Stage: st.Name(), Variant: v.Name, Version: v.Version, ConvSeq: sc.Seq}]; seen {
					continue
				}
				est.convs++
				prompts, per := callPrompts(st, sc.Conv, client != nil && v.Name == "llm" && est.convs <= sampleConvs)
				est.calls += int64(per)
				compl = completionGuess(st.Name())
				for _, msgs := range prompts {
					sampledCalls++
					sampledTk += int64(client.EstimatePrompt(msgs))
				}
			}
		}
		after = upto
	}
	if sampledCalls > 0 {
		est.promptTk = int64(math.Round(float64(sampledTk) / float64(sampledCalls) * float64(est.calls)))
	}
	est.complTk = compl * est.calls
	return est, nil
}

func completionGuess(stage string) int64 {
	switch stage {
	case constraints.StageName:
		return 80
	case pollution.StageName:
		return 150
	}
	return 120
}

// callPrompts returns how many calls (or heuristic units) st makes for c
// and, when render is set, the prompts of those calls.
func callPrompts(st pipeline.Stage, c *conv.Conversation, render bool) ([][]conv.Message, int) {
	var out [][]conv.Message
	n := c.UserTurns()
	switch st.Name() {
	case classify.StageName:
		a := &classify.LLM{}
		for t := classify.DefaultFrom; t <= n; t++ {
			if render {
				if msgs, err := a.Messages(c, t); err == nil {
					out = append(out, msgs)
				}
			}
		}
		return out, max(0, n-classify.DefaultFrom+1)
	case constraints.StageName:
		a := &constraints.LLM{}
		for t := 1; t <= n; t++ {
			if render {
				if msgs, err := a.Messages(constraints.InputAt(c, t, nil)); err == nil {
					out = append(out, msgs)
				}
			}
		}
		return out, n
	case pollution.StageName:
		a := &pollution.LLM{}
		turns := pollution.Turns(c)
		for _, t := range turns {
			if render {
				in, _ := pollution.DatasetInput(c, t)
				if msgs, err := a.Messages(in); err == nil {
					out = append(out, msgs)
				}
			}
		}
		return out, len(turns)
	}
	return nil, 0
}

func humanTokens(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1fB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

func evalHeuristicsCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "eval-heuristics",
		Usage: "measure the rule-based annotators on the labelled turns in fixtures/labelled",
		Description: `Runs the heuristic classify and constraints annotators on the labelled
sets we wrote (fixtures/labelled/classify.jsonl, constraints.jsonl) and prints
precision, recall and F1 per class, separately for the dev split (the rules
were tuned on it) and the held-out test split (never tuned on; the honest
number).

Examples:
   ac3 eval-heuristics
   ac3 eval-heuristics --dir fixtures/labelled --misses`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dir", Value: filepath.Join("fixtures", "labelled"), Usage: "folder holding classify.jsonl and constraints.jsonl"},
			&cli.BoolFlag{Name: "misses", Usage: "also list the ids of wrongly labelled examples"},
		},
		Action: func(c *cli.Context) error {
			return evalHeuristics(e.stdout, c.String("dir"), c.Bool("misses"))
		},
	}
}

func evalHeuristics(w io.Writer, dir string, misses bool) error {
	f, err := os.Open(filepath.Join(dir, "classify.jsonl"))
	if err != nil {
		return fmt.Errorf("opening labelled turns: %w", err)
	}
	cx, err := classify.ReadExamples(f)
	f.Close()
	if err != nil {
		return err
	}
	g, err := os.Open(filepath.Join(dir, "constraints.jsonl"))
	if err != nil {
		return fmt.Errorf("opening labelled turns: %w", err)
	}
	kx, err := constraints.ReadExamples(g)
	g.Close()
	if err != nil {
		return err
	}
	h := classify.NewHeuristic()
	label := func(c *conv.Conversation, t int) classify.Label { l, _ := h.Label(c, t); return l }
	fmt.Fprintf(w, "classify, heuristic annotator (%s), %d labelled turns\n", classify.HeuristicVersion, len(cx))
	for _, split := range []string{classify.Dev, classify.Test} {
		s := classify.Evaluate(cx, split, label)
		fmt.Fprintf(w, "  %s (n=%d): accuracy %s, macro F1 %s, refs exact %d/%d\n", splitName(split), s.N, f2(s.Accuracy), f2(s.MacroF1), s.RefsExact, s.N)
		printScores(w, s.Classes)
		if misses && len(s.Misses) > 0 {
			fmt.Fprintf(w, "    wrong: %s\n", strings.Join(s.Misses, ", "))
		}
	}
	ch := constraints.NewHeuristic()
	extract := func(in constraints.Input) []constraints.Constraint { n, _ := ch.Extract(in); return n }
	fmt.Fprintf(w, "\nconstraint detection, heuristic annotator (%s), %d labelled turns\n", constraints.HeuristicVersion, len(kx))
	for _, split := range []string{classify.Dev, classify.Test} {
		s := constraints.Evaluate(kx, split, extract)
		fmt.Fprintf(w, "  %s (n=%d): type right on %d of %d detected turns\n", splitName(split), s.N, s.TypeRight, s.TypeJudged)
		printScores(w, s.Detection)
		if misses && len(s.Misses) > 0 {
			fmt.Fprintf(w, "    wrong: %s\n", strings.Join(s.Misses, ", "))
		}
	}
	return nil
}

func splitName(s string) string {
	if s == classify.Dev {
		return "dev split (rules tuned on it)"
	}
	return "test split (held out)"
}

func printScores(w io.Writer, cs []classify.ClassScore) {
	fmt.Fprintf(w, "    %-12s %4s %9s %7s %5s\n", "class", "n", "precision", "recall", "F1")
	for _, c := range cs {
		fmt.Fprintf(w, "    %-12s %4d %9s %7s %5s\n", c.Class, c.Support, f2(c.Precision), f2(c.Recall), f2(c.F1))
	}
}

func f2(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return fmt.Sprintf("%.2f", x)
}
