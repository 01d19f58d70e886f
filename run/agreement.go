package run

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/ac3/ac3/io/atomicfile"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/stages/compint/agreement"
	"github.com/ac3/ac3/stages/compint/measure"
)

// Agreement is one measurement of a retention judge against people's
// labels (ac3 llm agreement).
type Agreement struct {
	// Labels is the label file (JSONL); Key a blind test's held-aside key
	// ("" for none).
	Labels, Key string
	// DB, when set, is a run file whose answer cache and call records the
	// judge's calls use, so a second measurement pays nothing.
	DB string
	// Role judges (default: the CompInt config's judge_role, else CompInt's
	// default judge role).
	Role string
	// CompInt is the run's CompInt configuration (nil: none), for its judge
	// role, retention prompt and SC set.
	CompInt *CompInt
	// JSON prints the report as JSON; Rows, when set, writes one JSON line
	// per judged row to that file.
	JSON bool
	Rows string
}

// JudgeAgreement measures a's judge on a's labels and writes the report to
// w; unusable label lines are listed on errw. It exits 2 (the figures
// printed) when label lines were left out or rows got no verdict, since the
// figures then rest on fewer rows than the file holds.
func JudgeAgreement(ctx context.Context, w, errw io.Writer, m Model, a Agreement) error {
	ci := a.CompInt
	if ci == nil {
		ci = &CompInt{}
	}
	role := cmp.Or(a.Role, ci.JudgeRole, measure.DefaultJudgeRole)
	set, err := ci.set()
	if err != nil {
		return err
	}
	var key agreement.Key
	keyProblems := 0
	if a.Key != "" {
		f, err := os.Open(a.Key)
		if err != nil {
			return fmt.Errorf("reading the key: %w", err)
		}
		var probs []agreement.Problem
		key, probs, err = agreement.ReadKey(f, a.Key)
		f.Close()
		if err != nil {
			return err
		}
		for _, p := range probs {
			fmt.Fprintf(errw, "left out: %s\n", p)
		}
		keyProblems = len(probs)
	}
	var l *ledger.Ledger
	if a.DB != "" {
		if l, err = ledger.Open(ctx, a.DB, ledger.Options{}); err != nil {
			return err
		}
		defer l.Close()
	}
	client, err := m.client(ctx, l, nil, nil)
	if err != nil {
		return err
	}
	f, err := os.Open(a.Labels)
	if err != nil {
		return fmt.Errorf("reading the labels: %w", err)
	}
	defer f.Close()
	// The rows file appears whole or not at all: a run that stops half way
	// must not leave a shorter file that looks finished.
	var rows *bufio.Writer
	var rowsErr error
	var rowsFile *atomicfile.File
	if a.Rows != "" {
		if rowsFile, err = atomicfile.Create(a.Rows); err != nil {
			return fmt.Errorf("writing the rows: %w", err)
		}
		defer rowsFile.Abort() // a no-op once committed
		rows = bufio.NewWriter(rowsFile)
	}
	t, err := agreement.Run(ctx, agreement.Read(f, a.Labels), agreement.Options{
		Client: client, Role: role, Prompts: ci.Prompts, Retries: 2, Set: set, Key: key,
		Problem: func(p agreement.Problem) { fmt.Fprintf(errw, "left out: %s\n", p) },
		Row: func(r agreement.Row, v agreement.Verdict) {
			if rows == nil || rowsErr != nil {
				return
			}
			out := struct {
				ID        string `json:"id"`
				Human     bool   `json:"human"`
				Judge     *bool  `json:"judge"`
				Reference *bool  `json:"reference,omitempty"`
				Type      string `json:"type,omitempty"`
				Group     string `json:"group,omitempty"`
				Error     string `json:"error,omitempty"`
			}{ID: r.ID, Human: r.Human, Reference: r.Reference, Type: r.Type, Group: r.Group}
			if v.Err != nil {
				out.Error = v.Err.Error()
			} else {
				out.Judge = &v.Retained
			}
			b, _ := json.Marshal(out)
			_, rowsErr = rows.Write(append(b, '\n'))
		},
	})
	if err != nil {
		if IsStop(err) || ctx.Err() != nil {
			return Stopped(err)
		}
		return fmt.Errorf("measuring judge %s on %s: %w", role, a.Labels, err)
	}
	if rows != nil {
		if rowsErr == nil {
			rowsErr = rows.Flush()
		}
		if rowsErr == nil {
			rowsErr = rowsFile.Commit()
		}
		if rowsErr != nil {
			return fmt.Errorf("writing the rows to %s: %w", a.Rows, rowsErr)
		}
	}
	rep := t.Report(role + " (" + m.roleSettings(role) + ")")
	if a.JSON {
		if err := rep.WriteJSON(w); err != nil {
			return err
		}
	} else {
		rep.WriteText(w)
	}
	if rep.Agreement.N == 0 {
		return fmt.Errorf("measuring judge %s: no row of %s was judged", role, a.Labels)
	}
	if t.Problems > 0 || t.NoVerdict > 0 || keyProblems > 0 {
		return &Exit{Code: ExitFailed, Err: fmt.Errorf("%d label lines and %d key lines left out, %d rows without a verdict: the figures rest on %d rows", t.Problems, keyProblems, t.NoVerdict, rep.Agreement.N)}
	}
	return nil
}
