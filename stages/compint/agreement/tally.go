package agreement

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"

	"github.com/ac3/ac3/pipeline/stats"
)

// Confusion counts two raters' YES/NO answers on the same rows: A is the
// judge under test (or the reference), B the people.
type Confusion struct {
	YesYes int `json:"yes_yes"` // both YES
	YesNo  int `json:"yes_no"`  // A YES, B NO
	NoYes  int `json:"no_yes"`  // A NO, B YES
	NoNo   int `json:"no_no"`   // both NO
}

// Add counts one row.
func (c *Confusion) Add(a, b bool) {
	switch {
	case a && b:
		c.YesYes++
	case a:
		c.YesNo++
	case b:
		c.NoYes++
	default:
		c.NoNo++
	}
}

// N is the number of rows counted.
func (c Confusion) N() int { return c.YesYes + c.YesNo + c.NoYes + c.NoNo }

// Agree is the number of rows on which both said the same.
func (c Confusion) Agree() int { return c.YesYes + c.NoNo }

// Accuracy is the share of rows on which both said the same (NaN with no
// rows).
func (c Confusion) Accuracy() float64 {
	if c.N() == 0 {
		return math.NaN()
	}
	return float64(c.Agree()) / float64(c.N())
}

// Kappa is Cohen's κ: agreement beyond what the two raters' YES rates
// would give by chance. NaN with no rows; 1 when chance agreement is
// already perfect (both said one answer throughout), as the reference
// code reports it.
func (c Confusion) Kappa() float64 {
	n := float64(c.N())
	if n == 0 {
		return math.NaN()
	}
	po := float64(c.Agree()) / n
	pa := float64(c.YesYes+c.YesNo) / n
	pb := float64(c.YesYes+c.NoYes) / n
	pe := pa*pb + (1-pa)*(1-pb)
	if pe == 1 {
		return 1
	}
	return (po - pe) / (1 - pe)
}

// Summary is a Confusion's figures.
type Summary struct {
	Confusion
	N        int        `json:"n"`
	Accuracy float64    `json:"accuracy"`
	CI95     [2]float64 `json:"accuracy_ci95"`
	Kappa    float64    `json:"kappa"`
	AYes     float64    `json:"a_yes_rate"`
	BYes     float64    `json:"b_yes_rate"`
}

// Summarize gives c's figures, with the Wilson 95% interval of its
// accuracy.
func (c Confusion) Summarize() Summary {
	s := Summary{Confusion: c, N: c.N(), Accuracy: c.Accuracy(), Kappa: c.Kappa()}
	iv := stats.Wilson(float64(c.Agree()), c.N(), 0.95)
	s.CI95 = [2]float64{iv.Lo, iv.Hi}
	if s.N > 0 {
		s.AYes = float64(c.YesYes+c.YesNo) / float64(s.N)
		s.BYes = float64(c.YesYes+c.NoYes) / float64(s.N)
	}
	return s
}

// Verdict is the judge's answer on one row: Err is set when it gave none
// it could be held to (after the retries).
type Verdict struct {
	Retained bool
	Err      error
}

// Tally folds judged rows into the figures of a report. Only counts and
// the disagreements (up to MaxListed) are kept, so any number of rows
// folds in the same memory.
type Tally struct {
	// Judge is the judge under test against the people; Reference the
	// verdicts given with the labels against the people; JudgeVsReference
	// the two judges against each other, on rows that have both.
	Judge, Reference, JudgeVsReference Confusion
	ByType, ByGroup                    map[string]*Confusion
	NoVerdict                          int
	Problems                           int
	Disagreements                      []Disagreement
	MoreDisagreements                  int
}

// Disagreement is a row on which the judge and the people differ.
type Disagreement struct {
	ID         string `json:"id"`
	Judge      bool   `json:"judge"`
	Human      bool   `json:"human"`
	Type       string `json:"type,omitempty"`
	Group      string `json:"group,omitempty"`
	Constraint string `json:"constraint"`
}

// MaxListed is how many disagreements a report lists.
const MaxListed = 50

// Add folds one row and the judge's verdict on it.
func (t *Tally) Add(r Row, v Verdict) {
	if r.Reference != nil {
		t.Reference.Add(*r.Reference, r.Human)
	}
	if v.Err != nil {
		t.NoVerdict++
		return
	}
	t.Judge.Add(v.Retained, r.Human)
	if r.Reference != nil {
		t.JudgeVsReference.Add(v.Retained, *r.Reference)
	}
	if t.ByType == nil {
		t.ByType, t.ByGroup = map[string]*Confusion{}, map[string]*Confusion{}
	}
	add := func(m map[string]*Confusion, k string) {
		c := m[k]
		if c == nil {
			c = &Confusion{}
			m[k] = c
		}
		c.Add(v.Retained, r.Human)
	}
	add(t.ByType, cmp.Or(r.Type, "unknown"))
	if r.Group != "" {
		add(t.ByGroup, r.Group)
	}
	if v.Retained != r.Human {
		if len(t.Disagreements) < MaxListed {
			t.Disagreements = append(t.Disagreements, Disagreement{ID: r.ID, Judge: v.Retained, Human: r.Human, Type: r.Type, Group: r.Group, Constraint: clip(r.Constraint, 120)})
		} else {
			t.MoreDisagreements++
		}
	}
}

// Report is what the agreement command prints, as JSON.
type Report struct {
	Judge            string             `json:"judge"`
	Rows             int                `json:"rows"`
	Problems         int                `json:"problems"`
	NoVerdict        int                `json:"no_verdict"`
	Agreement        Summary            `json:"agreement"`
	Reference        *Summary           `json:"reference,omitempty"`
	JudgeVsReference *Summary           `json:"judge_vs_reference,omitempty"`
	ByType           map[string]Summary `json:"by_type"`
	ByGroup          map[string]Summary `json:"by_group,omitempty"`
	Disagreements    []Disagreement     `json:"disagreements"`
	More             int                `json:"more_disagreements,omitempty"`
}

// Report gives t's figures for the judge named judge.
func (t *Tally) Report(judge string) Report {
	r := Report{Judge: judge, Rows: t.Judge.N() + t.NoVerdict, Problems: t.Problems, NoVerdict: t.NoVerdict,
		Agreement: t.Judge.Summarize(), ByType: map[string]Summary{}, Disagreements: t.Disagreements, More: t.MoreDisagreements}
	if r.Disagreements == nil {
		r.Disagreements = []Disagreement{}
	}
	if t.Reference.N() > 0 {
		s := t.Reference.Summarize()
		r.Reference = &s
		v := t.JudgeVsReference.Summarize()
		r.JudgeVsReference = &v
	}
	for k, c := range t.ByType {
		r.ByType[k] = c.Summarize()
	}
	if len(t.ByGroup) > 0 {
		r.ByGroup = map[string]Summary{}
		for k, c := range t.ByGroup {
			r.ByGroup[k] = c.Summarize()
		}
	}
	return r
}

// WriteJSON writes r as indented JSON.
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(nanFree(r))
}

// nanFree replaces NaN figures (no rows) by zero-row markers JSON can hold.
func nanFree(r Report) any {
	fix := func(s Summary) Summary {
		if math.IsNaN(s.Accuracy) {
			s.Accuracy = 0
		}
		if math.IsNaN(s.Kappa) {
			s.Kappa = 0
		}
		if math.IsNaN(s.CI95[0]) || math.IsNaN(s.CI95[1]) {
			s.CI95 = [2]float64{}
		}
		return s
	}
	r.Agreement = fix(r.Agreement)
	if r.Reference != nil {
		s, v := fix(*r.Reference), fix(*r.JudgeVsReference)
		r.Reference, r.JudgeVsReference = &s, &v
	}
	for k, s := range r.ByType {
		r.ByType[k] = fix(s)
	}
	for k, s := range r.ByGroup {
		r.ByGroup[k] = fix(s)
	}
	return r
}

// WriteText writes r for a person.
func (r Report) WriteText(w io.Writer) {
	fmt.Fprintf(w, "retention judge %s against the people's labels\n", r.Judge)
	fmt.Fprintf(w, "rows:       %d judged", r.Agreement.N)
	if r.NoVerdict > 0 {
		fmt.Fprintf(w, ", %d without a verdict (left out)", r.NoVerdict)
	}
	if r.Problems > 0 {
		fmt.Fprintf(w, ", %d label lines unusable (listed above)", r.Problems)
	}
	fmt.Fprintln(w)
	line := func(name string, s Summary) {
		fmt.Fprintf(w, "%-11s %s\n", name+":", summaryText(s))
	}
	line("agreement", r.Agreement)
	writeConfusion(w, "judge", r.Agreement.Confusion)
	if r.Reference != nil {
		line("reference", *r.Reference)
		fmt.Fprintf(w, "            (the verdicts given with the labels, e.g. the paper's judge, against the same people)\n")
		line("judge vs reference", *r.JudgeVsReference)
	}
	writeGroups(w, "by SC type", r.ByType)
	writeGroups(w, "by compactor", r.ByGroup)
	if len(r.Disagreements) > 0 {
		fmt.Fprintf(w, "disagreements: %d\n", len(r.Disagreements)+r.More)
		for _, d := range r.Disagreements {
			fmt.Fprintf(w, "  %s  judge %s, people %s  %s  %q\n", d.ID, yesNo(d.Judge), yesNo(d.Human), cmp.Or(d.Type, "-"), d.Constraint)
		}
		if r.More > 0 {
			fmt.Fprintf(w, "  … and %d more (--json lists the first %d)\n", r.More, MaxListed)
		}
	}
}

func summaryText(s Summary) string {
	if s.N == 0 {
		return "no rows"
	}
	return fmt.Sprintf("%d/%d = %.1f%% [95%% CI %.1f–%.1f%%], Cohen's κ %.3f; YES rates %.1f%% vs people %.1f%%",
		s.Agree(), s.N, 100*s.Accuracy, 100*s.CI95[0], 100*s.CI95[1], s.Kappa, 100*s.AYes, 100*s.BYes)
}

func writeConfusion(w io.Writer, a string, c Confusion) {
	fmt.Fprintf(w, "            %-10s people YES  people NO\n", "")
	fmt.Fprintf(w, "            %-10s %10d %10d\n", a+" YES", c.YesYes, c.YesNo)
	fmt.Fprintf(w, "            %-10s %10d %10d\n", a+" NO", c.NoYes, c.NoNo)
}

func writeGroups(w io.Writer, title string, m map[string]Summary) {
	if len(m) == 0 {
		return
	}
	fmt.Fprintln(w, title+":")
	for _, k := range slices.Sorted(maps.Keys(m)) {
		s := m[k]
		fmt.Fprintf(w, "  %-24s %3d/%-3d = %5.1f%%  κ %s\n", k, s.Agree(), s.N, 100*s.Accuracy, kappaText(s.Kappa))
	}
}

func kappaText(k float64) string {
	if math.IsNaN(k) {
		return "-"
	}
	return fmt.Sprintf("%.3f", k)
}

func yesNo(b bool) string {
	if b {
		return "YES"
	}
	return "NO"
}
