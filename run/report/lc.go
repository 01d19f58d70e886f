package report

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/ac3/ac3/pipeline/stats"
)

// LengthControlled is the length-controlled win rate of strategy A on one
// pair and dimension (stats.LCData.Fit in report form): a logistic model
// of the verdict on the normalised difference of the two answers' lengths,
// read at equal length, with a bootstrap interval over conversations.
type LengthControlled struct {
	N             int `json:"n"`
	Conversations int `json:"conversations"`
	Invalid       int `json:"invalid"`
	// NoLength counts verdicts left out because an answer's length could
	// not be read (its respond unit is no longer in the plan).
	NoLength  int      `json:"no_length"`
	WinRate   Num      `json:"win_rate"`    // raw, on the same verdicts
	LCWinRate Num      `json:"lc_win_rate"` // modelled at equal lengths
	CI        Interval `json:"ci"`
	Intercept Num      `json:"intercept"`
	Slope     Num      `json:"slope"` // on tanh(Δ/scale)
	Scale     Num      `json:"scale"` // standard deviation of LenA − LenB, characters
	SmallN    bool     `json:"small_n"`
	FewConvs  bool     `json:"few_conversations"`
	Warning   string   `json:"warning,omitempty"`
}

// lcFold folds one pair and dimension's verdicts with the lengths of the
// two answers. Verdicts arrive in seq order, so each conversation's are
// adjacent: the open conversation is kept in fields and, when the next one
// starts, appended to enc as uvarint(seq − previous seq), uvarint(count)
// and per verdict its outcome byte and the zigzag varint of LenA − LenB.
// The fit needs only the difference, so that is all that is kept: 2–4
// bytes per verdict, read back in conversation-id order by report.
type lcFold struct {
	enc      []byte
	prev     int64
	open     bool
	seq      int64
	cur      []stats.LengthSample
	noLength int
	err      error
}

func (l *lcFold) add(seq int64, o stats.Outcome, lenA, lenB int) {
	if !l.open || seq != l.seq {
		if l.open && seq < l.seq && l.err == nil {
			l.err = fmt.Errorf("reading judge units: conversation seq %d came after seq %d", seq, l.seq)
		}
		l.flush()
		l.open, l.seq = true, seq
	}
	l.cur = append(l.cur, stats.LengthSample{Outcome: o, LenA: lenA, LenB: lenB})
}

func (l *lcFold) flush() {
	if !l.open {
		return
	}
	l.enc = binary.AppendUvarint(l.enc, uint64(l.seq-l.prev))
	l.enc = binary.AppendUvarint(l.enc, uint64(len(l.cur)))
	for _, s := range l.cur {
		l.enc = append(l.enc, byte(s.Outcome))
		l.enc = binary.AppendVarint(l.enc, int64(s.LenA)-int64(s.LenB))
	}
	l.prev, l.open, l.cur = l.seq, false, l.cur[:0]
}

// report adds the conversations to a stats.LCData in id order (as
// stats.LengthControlledWinRate does) and fits.
func (l *lcFold) report(convs *convTable, ranks []uint32, so stats.Options) (*LengthControlled, error) {
	if l.err != nil {
		return nil, l.err
	}
	l.flush()
	type rec struct {
		rank uint32
		at   int // offset of the record's count in enc
	}
	var recs []rec
	var seq int64
	for i := 0; i < len(l.enc); {
		d, n := binary.Uvarint(l.enc[i:])
		seq += int64(d)
		p, ok := convs.position(seq)
		if !ok {
			return nil, fmt.Errorf("length-controlled win rate: conversation seq %d has no id", seq)
		}
		recs = append(recs, rec{ranks[p], i + n})
		i += n
		k, n := binary.Uvarint(l.enc[i:])
		i += n
		for range k {
			_, n := binary.Varint(l.enc[i+1:])
			i += 1 + n
		}
	}
	slices.SortFunc(recs, func(a, b rec) int { return cmp.Compare(a.rank, b.rank) })
	var d stats.LCData
	var samples []stats.LengthSample
	for _, r := range recs {
		i := r.at
		k, n := binary.Uvarint(l.enc[i:])
		i += n
		samples = samples[:0]
		for range k {
			o := stats.Outcome(l.enc[i])
			diff, n := binary.Varint(l.enc[i+1:])
			i += 1 + n
			s := stats.LengthSample{Outcome: o, LenA: int(diff)}
			if diff < 0 {
				s.LenA, s.LenB = 0, int(-diff)
			}
			samples = append(samples, s)
		}
		if err := d.AddConversation(samples); err != nil {
			return nil, fmt.Errorf("length-controlled win rate: %w", err)
		}
	}
	l.enc = nil
	f := d.Fit(so)
	return &LengthControlled{
		N: f.N, Conversations: f.Conversations, Invalid: f.Invalid, NoLength: l.noLength,
		WinRate: Num(f.WinRate), LCWinRate: Num(f.LCWinRate), CI: interval(f.Bootstrap),
		Intercept: Num(f.Intercept), Slope: Num(f.Slope), Scale: Num(f.Scale),
		SmallN: f.SmallN, FewConvs: f.FewConversations, Warning: f.Warning,
	}, nil
}
