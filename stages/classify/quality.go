package classify

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/ac3/ac3/pipeline/conv"
)

// Quality is an annotator's measured quality on one part of a labelled set,
// for reports and status to print beside the turn-type shares the annotator
// produced. Undefined ratios (nothing labelled) are NaN.
type Quality struct {
	// Annotator is the version measured (HeuristicVersion); the figures
	// apply to units of that version only (see Applies).
	Annotator string
	// Set names the labelled set and its part, e.g.
	// "classify-wildchat.jsonl test split, English".
	Set      string
	N        int     // labelled-set turns scored
	Labelled int     // turns the annotator gave a type (not Unknown)
	Coverage float64 // Labelled / N
	Accuracy float64 // right types among the Labelled turns
	// MacroF1 is the mean F1 of the three types over the Labelled turns;
	// abstentions count neither for nor against any type.
	MacroF1 float64
	// MajorityRate is the share of the set's most common gold type (the
	// accuracy of always answering it); MajorityRateLabelled is the same
	// on the Labelled turns only, the baseline Accuracy must beat.
	MajorityRate         float64
	MajorityRateLabelled float64
}

// Applies reports whether q was measured on the annotator that wrote units
// of the given variant version ("classify-heuristic@v2;from=2").
func (q Quality) Applies(variantVersion string) bool {
	return variantVersion == q.Annotator || strings.HasPrefix(variantVersion, q.Annotator+";")
}

// String renders q as one line for reports and status.
func (q Quality) String() string {
	return fmt.Sprintf("coverage %s, accuracy %s where it answered (majority class %s), macro-F1 %s; %d turns of %s",
		pct(q.Coverage), pct(q.Accuracy), pct(q.MajorityRateLabelled), dec(q.MacroF1), q.N, q.Set)
}

func pct(f float64) string {
	if math.IsNaN(f) {
		return "n/a"
	}
	return fmt.Sprintf("%.0f%%", 100*f)
}

func dec(f float64) string {
	if math.IsNaN(f) {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", f)
}

// MeasureQuality scores label on one split of examples (as Evaluate does)
// and returns the figures as a Quality named set. Ratios are rounded to
// four decimals so stored figures compare exactly.
func MeasureQuality(annotator, set string, examples []Example, split string, label func(c *conv.Conversation, t int) Label) Quality {
	s := Evaluate(examples, split, label)
	return Quality{
		Annotator: annotator, Set: set, N: s.N, Labelled: s.Labelled,
		Coverage: round4(s.Coverage), Accuracy: round4(s.Accuracy), MacroF1: round4(s.MacroF1),
		MajorityRate: round4(s.MajorityRate), MajorityRateLabelled: round4(s.MajorityRateLabelled),
	}
}

func round4(f float64) float64 {
	if math.IsNaN(f) {
		return f
	}
	return math.Round(f*1e4) / 1e4
}

// heuristicQualityJSON holds the heuristic's figures on the shipped
// labelled sets. It is data, not code, so that a test can recompute it from
// fixtures/labelled and fail when the rules change without the figures
// being refreshed (`go test ./stages/classify -run Quality -update`).
//
//go:embed heuristic_quality.json
var heuristicQualityJSON []byte

// qualityRecord is the stored form of a Quality: JSON has no NaN, so an
// undefined ratio is null.
type qualityRecord struct {
	Annotator            string   `json:"annotator"`
	Set                  string   `json:"set"`
	N                    int      `json:"n"`
	Labelled             int      `json:"labelled"`
	Coverage             *float64 `json:"coverage"`
	Accuracy             *float64 `json:"accuracy"`
	MacroF1              *float64 `json:"macro_f1"`
	MajorityRate         *float64 `json:"majority_rate"`
	MajorityRateLabelled *float64 `json:"majority_rate_labelled"`
}

// HeuristicQualities returns the heuristic's measured quality on every
// shipped labelled set and split, headline first (see HeuristicQuality).
// Each call returns a fresh slice.
func HeuristicQualities() []Quality {
	qs, err := DecodeQualities(heuristicQualityJSON)
	if err != nil {
		// The file is embedded and checked by TestHeuristicQualityFigures;
		// failing here means the binary was built from a broken tree.
		panic(fmt.Sprintf("classify: embedded heuristic_quality.json: %v", err))
	}
	return qs
}

// HeuristicQuality returns the heuristic's quality on held-out real
// WildChat turns (the test split of classify-wildchat.jsonl, English): the
// figure to show beside turn-type shares the heuristic produced.
func HeuristicQuality() Quality { return HeuristicQualities()[0] }

// DecodeQualities reads stored quality figures (the shape of
// heuristic_quality.json): a JSON list, null for undefined ratios.
func DecodeQualities(b []byte) ([]Quality, error) {
	var recs []qualityRecord
	if err := json.Unmarshal(b, &recs); err != nil {
		return nil, fmt.Errorf("decoding quality figures: %w", err)
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("decoding quality figures: no sets")
	}
	f := func(p *float64) float64 {
		if p == nil {
			return math.NaN()
		}
		return *p
	}
	out := make([]Quality, len(recs))
	for i, r := range recs {
		out[i] = Quality{Annotator: r.Annotator, Set: r.Set, N: r.N, Labelled: r.Labelled,
			Coverage: f(r.Coverage), Accuracy: f(r.Accuracy), MacroF1: f(r.MacroF1),
			MajorityRate: f(r.MajorityRate), MajorityRateLabelled: f(r.MajorityRateLabelled)}
	}
	return out, nil
}

// EncodeQualities writes figures in the stored form DecodeQualities reads,
// indented, one set per object.
func EncodeQualities(qs []Quality) ([]byte, error) {
	p := func(x float64) *float64 {
		if math.IsNaN(x) {
			return nil
		}
		return &x
	}
	recs := make([]qualityRecord, len(qs))
	for i, q := range qs {
		recs[i] = qualityRecord{Annotator: q.Annotator, Set: q.Set, N: q.N, Labelled: q.Labelled,
			Coverage: p(q.Coverage), Accuracy: p(q.Accuracy), MacroF1: p(q.MacroF1),
			MajorityRate: p(q.MajorityRate), MajorityRateLabelled: p(q.MajorityRateLabelled)}
	}
	b, err := json.MarshalIndent(recs, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding quality figures: %w", err)
	}
	return append(b, '\n'), nil
}
