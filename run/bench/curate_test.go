//go:build unix

package bench_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/ac3/ac3/io/detect"
	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/tokens"
	"github.com/ac3/ac3/stages/curate"
)

// curateConvs is how many conversations (each with two user turns or more,
// so that every strategy has a turn to curate) figure 2 uses: a few million
// tokens, several seconds per pass at the tokenizer's speed.
const curateConvs = 2000

// curateInput reads the first curateConvs conversations with at least two
// user turns from the generated file.
func curateInput(b *testing.B) []*conv.Conversation {
	b.Helper()
	in := input(b)
	ctx := context.Background()
	r, _, err := detect.Open(ctx, in.Path, detect.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	var out []*conv.Conversation
	for len(out) < curateConvs {
		rec, err := r.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
		if rec.Conv != nil && rec.Conv.UserTurns() >= 2 {
			out = append(out, rec.Conv)
		}
	}
	return out
}

// neededText is what curating every turn from 2 needs tokenized: the system
// message and each message up to the last user message (the final reply is
// in no context). The same definition as stages/curate's benchmarks.
func neededText(c *conv.Conversation) []string {
	turns := c.Turns()
	last := turns[len(turns)-1].User
	texts := []string{c.System}
	for _, m := range c.Messages[:last+1] {
		texts = append(texts, m.Content)
	}
	return texts
}

// BenchmarkCurate is figure 2: curating fc, ao, lt and de with token counts
// for every turn from 2, against tokenizing the text those contexts are
// made of once. Each is timed twice and the faster run kept. All run on one goroutine, so the ratio compares work, not
// parallelism; tok/s counts input tokens in both.
func BenchmarkCurate(b *testing.B) {
	convs := curateInput(b)
	cnt, err := tokens.New("")
	if err != nil {
		b.Fatal(err)
	}
	ss, err := curate.Resolve("fc,ao,lt,de", curate.Options{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var input int
	var alone measured
	report := func(b *testing.B, m measured) (wall, cpu float64) {
		wall, cpu = float64(input)/m.wall.Seconds(), float64(input)/m.cpu.Seconds()
		b.ReportMetric(wall, "tok/s")
		b.ReportMetric(cpu, "tok/cpu-s")
		return wall, cpu
	}
	b.Run("tokenizer-alone", func(b *testing.B) {
		cnt.Count("warm up the encoder before timing")
		input = 0
		m, err := bestOf(runs, func() error {
			input = 0
			for _, c := range convs {
				for _, s := range neededText(c) {
					input += cnt.Count(s)
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		alone = m
		wall, cpu := report(b, m)
		addRow("2. curation, one goroutine", fmt.Sprintf("tokenizer alone (%d conversations, %.1fM tokens)", len(convs), float64(input)/1e6),
			"%9.0f tok/s wall  %9.0f tok/CPU-s", wall, cpu)
	})
	cases := []struct {
		name, what string
		run        func() error
	}{
		{"strategies", "fc,ao,lt,de with token counts", func() error {
			for _, c := range convs {
				tc := curate.NewWorkspace(c, cnt)
				for _, s := range ss {
					if _, err := s.Contexts(ctx, c, curate.DefaultFrom, tc); err != nil {
						return err
					}
				}
			}
			return nil
		}},
		{"stage", "the curate stage (also encodes each context)", func() error {
			st := curate.NewStage(ss, cnt, 0)
			vs := st.Variants()
			for i, c := range convs {
				if _, err := st.Process(ctx, pipeline.Task{Seq: int64(i), Conv: c, Variants: vs}); err != nil {
					return err
				}
			}
			return nil
		}},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			if input == 0 {
				b.Skip("needs tokenizer-alone first, for the token count")
			}
			m, err := bestOf(runs, tc.run)
			if err != nil {
				b.Fatal(err)
			}
			wall, cpu := report(b, m)
			rw, rc := alone.wall.Seconds()/m.wall.Seconds(), alone.cpu.Seconds()/m.cpu.Seconds()
			b.ReportMetric(rw, "x-tokenizer")
			addRow("2. curation, one goroutine", tc.what,
				"%9.0f tok/s wall  %9.0f tok/CPU-s  ratio %.2f wall, %.2f CPU (target >= 0.8)", wall, cpu, rw, rc)
		})
	}
}
