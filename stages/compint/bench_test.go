package compint_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/stages/compint"
)

// BenchmarkBuildPaperScale stitches one context of the paper's length
// (100K tokens) from synthetic conversations and expands it on every axis
// (15 SCs × (1 baseline + 4 locations × 4 framings) = 255 instances).
// Counting tokens dominates: every message once while stitching, and each
// injected user message again per instance.
func BenchmarkBuildPaperScale(b *testing.B) {
	tok := mustCounter(b)
	var cs []*conv.Conversation
	for i := range 80 {
		cs = append(cs, synthConv(fmt.Sprintf("c%03d", i), 6, 250))
	}
	set := compint.Default()
	opt := compint.Options{Locations: compint.Locations(), Framings: compint.Framings(), Repeat: 5, Seed: 1}
	var instances, tokens int
	for b.Loop() {
		st, err := compint.NewStitcher(tok, compint.StitchOptions{TargetTokens: compint.PaperTargetTokens, MaxContexts: 1})
		if err != nil {
			b.Fatal(err)
		}
		bd, err := compint.NewBuilder(tok, set, opt)
		if err != nil {
			b.Fatal(err)
		}
		instances = 0
		_, err = compint.Build(context.Background(), seq(cs), st, bd, func(in *compint.Instance) error {
			instances++
			tokens = in.Meta.BaseTokens
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	if instances != 255 {
		b.Fatalf("%d instances", instances)
	}
	b.ReportMetric(float64(instances)*float64(b.N)/b.Elapsed().Seconds(), "instances/s")
	b.ReportMetric(float64(tokens), "context_tokens")
}

// BenchmarkMatchEvidence100K looks for an SC in a 100K-token context.
func BenchmarkMatchEvidence100K(b *testing.B) {
	tok := mustCounter(b)
	var ctx []conv.Message
	n := 0
	for i := 0; n < compint.PaperTargetTokens; i++ {
		c := synthConv(fmt.Sprintf("c%03d", i), 6, 250)
		ctx = append(ctx, c.Messages...)
		n += tok.CountMessages(c.Messages)
	}
	sc := compint.Default().SCs[1].Text
	var bytes int64
	for _, m := range ctx {
		bytes += int64(len(m.Content))
	}
	b.SetBytes(bytes)
	for b.Loop() {
		if e := compint.MatchEvidence(sc, ctx); e.Exact {
			b.Fatal("found an SC that is not there")
		}
	}
}

// BenchmarkCountFloor counts, once, every message of the conversations
// BenchmarkBuildPaperScale stitches into its context: the least any builder
// must tokenize. The ratio of the two is the cost of counting each
// instance's injected messages exactly.
func BenchmarkCountFloor(b *testing.B) {
	tok := mustCounter(b)
	var cs []*conv.Conversation
	n := 0
	for i := 0; n < compint.PaperTargetTokens; i++ {
		c := synthConv(fmt.Sprintf("c%03d", i), 6, 250)
		cs = append(cs, c)
		n += tok.CountMessages(c.Messages)
	}
	for b.Loop() {
		for _, c := range cs {
			for _, m := range c.Messages {
				tok.Count(m.Content)
			}
		}
	}
}
