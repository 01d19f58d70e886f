package run

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/stages/classify"
	"github.com/ac3/ac3/stages/constraints"
)

// readExamples reads the labelled set at path with read, the annotator's
// own reader: both sets are files of the same kind.
func readExamples[T any](path string, read func(io.Reader) ([]T, error)) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening labelled turns: %w", err)
	}
	defer f.Close()
	return read(f)
}

// EvalHeuristics measures the rule-based classify and constraints annotators
// on the labelled sets in dir (classify.jsonl, constraints.jsonl) and prints
// precision, recall and F1 per class for the dev and the held-out test split;
// misses also lists the ids of wrongly labelled examples.
func EvalHeuristics(w io.Writer, dir string, misses bool) error {
	cx, err := readExamples(filepath.Join(dir, "classify.jsonl"), classify.ReadExamples)
	if err != nil {
		return err
	}
	kx, err := readExamples(filepath.Join(dir, "constraints.jsonl"), constraints.ReadExamples)
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
