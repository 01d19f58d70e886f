package report

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// pollutionCell formats one category of one variant: count out of the
// replies reviewed, rate, Wilson interval and the annotator's mean
// confidence on those replies.
func pollutionCell(p Proportion, conf Num) string {
	s := fmt.Sprintf("%d/%d (%s, %s)", p.Count, p.Of, pct(p.Rate), ivl(p.Wilson))
	if conf.Known() {
		s += " conf " + fix(conf, 2)
	}
	return s
}

// pollutionRows returns the table of a ReplyPollution in Table 1's shape:
// a header of variant sources, then one row per category, the any-category
// row and the conversation-level row.
func (rp *ReplyPollution) rows() (head []string, rows [][]string) {
	head = []string{"category"}
	for _, v := range rp.Variants {
		head = append(head, v.Source)
	}
	if len(rp.Variants) == 0 {
		return head, nil
	}
	for ci, c := range rp.Variants[0].Categories {
		row := []string{c.Category}
		for _, v := range rp.Variants {
			row = append(row, pollutionCell(v.Categories[ci].Replies, v.Categories[ci].MeanConfidence))
		}
		rows = append(rows, row)
	}
	any, convs, clean, rev := []string{"any (turn level)"}, []string{"any (conversation level, sample 0)"}, []string{"clean replies: mean confidence"}, []string{"not reviewed (failed, no reply)"}
	for _, v := range rp.Variants {
		any = append(any, pollutionCell(v.Any, Num(math.NaN())))
		convs = append(convs, pollutionCell(v.AnyConversations, Num(math.NaN())))
		clean = append(clean, fix(v.AbsentConfidence, 2))
		rev = append(rev, fmt.Sprintf("%d, %d", v.Failed, v.Unavailable))
	}
	return head, append(rows, any, convs, clean, rev)
}

// source names a variant by where its replies come from ("dataset", "fc").
func (rp *ReplyPollution) source(variant string) string {
	for _, v := range rp.Variants {
		if v.Variant == variant {
			return v.Source
		}
	}
	return variant
}

func pairCategory(c string) string {
	if c == "" {
		return "any"
	}
	return c
}

const replyPollutionIntro = "How often replies carry over something from earlier assistant turns, per history: the dataset's own replies and the replies generated under each strategy (the filler strategy's replies are the filler-history baseline, regenerated on the same turns). Every reply is reviewed with the same prompt against the conversation's own history, blind to the strategy. Cells: polluted/reviewed (rate, 95% Wilson interval, replies treated as independent) and the annotator's mean confidence on the polluted ones."

const replyPairsIntro = "Paired on the replies both reviewed (same conversation, turn and sample). Only A: polluted under A and clean under B (with A fc and B filler, the flagged replies that turned clean under filler). McNemar p treats replies as independent."

// mdReplyPollution writes the generated-reply pollution section.
func (r *Report) mdReplyPollution(b *mdWriter) {
	rp := r.ReplyPollution
	if rp == nil {
		return
	}
	b.f("## Pollution of generated replies\n\n%s\n\n", replyPollutionIntro)
	head, rows := rp.rows()
	b.f("| %s |\n|---|%s\n", strings.Join(head, " | "), strings.Repeat("---|", len(head)-1))
	for _, row := range rows {
		cells := make([]string, len(row))
		for i, c := range row {
			cells[i] = esc(c)
		}
		b.f("| %s |\n", strings.Join(cells, " | "))
	}
	b.f("\n")
	if len(rp.Pairs) > 0 {
		b.f("%s\n\n| A | B | category | pairs | polluted A | polluted B | only A | only B | McNemar p |\n|---|---|---|---:|---:|---:|---:|---:|---:|\n", replyPairsIntro)
		for _, p := range rp.Pairs {
			b.f("| %s | %s | %s | %d | %d | %d | %d | %d | %s |\n", rp.source(p.A), rp.source(p.B), pairCategory(p.Category), p.Pairs, p.PollutedA, p.PollutedB, p.OnlyA, p.OnlyB, pval(p.P))
		}
		b.f("\n")
	}
}

// htmlReplyPollution writes the generated-reply pollution section.
func (r *Report) htmlReplyPollution(b *strings.Builder) {
	rp := r.ReplyPollution
	if rp == nil {
		return
	}
	e := html.EscapeString
	fmt.Fprintf(b, "<h2>Pollution of generated replies</h2>\n<p class=meta>%s</p>\n<table><tr>", e(replyPollutionIntro))
	head, rows := rp.rows()
	for _, h := range head {
		fmt.Fprintf(b, "<th>%s</th>", e(h))
	}
	b.WriteString("</tr>\n")
	// A category's row, and the row of any category, open the conversations
	// whose generated replies were found polluted so (the rows after them
	// are totals).
	for ri, row := range rows {
		b.WriteString("<tr>")
		for i, c := range row {
			cls, cell := "", e(c)
			if i > 0 {
				cls = " class=l"
			}
			switch {
			case i == 0 && ri < len(rows)-4:
				cell = anchor(r.view.conversations("reply_pollution", c), c)
			case i == 0 && ri == len(rows)-4:
				cell = anchor(r.view.conversations("reply_pollution", "any"), c)
			}
			fmt.Fprintf(b, "<td%s>%s</td>", cls, cell)
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</table>\n")
	if len(rp.Pairs) > 0 {
		fmt.Fprintf(b, "<p class=meta>%s</p>\n<table><tr><th>A</th><th>B</th><th>category</th><th>pairs</th><th>polluted A</th><th>polluted B</th><th>only A</th><th>only B</th><th>McNemar p</th></tr>\n", e(replyPairsIntro))
		for _, p := range rp.Pairs {
			fmt.Fprintf(b, "<tr><td>%s</td><td class=l>%s</td><td class=l>%s</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%s</td></tr>\n", e(rp.source(p.A)), e(rp.source(p.B)), e(pairCategory(p.Category)), p.Pairs, p.PollutedA, p.PollutedB, p.OnlyA, p.OnlyB, pval(p.P))
		}
		b.WriteString("</table>\n")
	}
}
