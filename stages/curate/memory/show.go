package memory

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/ac3/ac3/pipeline/ledger"
)

// ShowStore is what Show reads. *ledger.Ledger satisfies it.
type ShowStore interface {
	MetaStore
	Conversation(ctx context.Context, id string) (ledger.Stored, bool, error)
	Path() string
}

// Show writes, for a person to read, the run's cheatsheets: the
// frozen offline one, and for each online chain where it stands. With
// convID, the online step of that conversation: the cheatsheet its step 2
// was given, the takeaways it gave and the cheatsheet after it. With text,
// the cheatsheets themselves. (Like inspect.Render, it is the text `ac3`
// shows.)
func Show(ctx context.Context, w io.Writer, store ShowStore, convID string, text bool) error {
	mw := memoryWriter{w: w, text: text}
	found := false
	if rec, ok, err := LoadOffline(ctx, store); err != nil {
		return err
	} else if ok {
		found = true
		fmt.Fprintf(w, "offline: cheatsheet %s (%d words), learned on the first %d conversations (up to seq %d), $%.4f\n",
			rec.Hash, len(strings.Fields(rec.Cheatsheet)), rec.Conversations, rec.LastSeq, rec.CostUSD)
		mw.sheet(rec.Cheatsheet)
	}
	chains, err := OnlineChains(ctx, store)
	if err != nil {
		return err
	}
	var seq int64
	if convID != "" {
		sc, ok, err := store.Conversation(ctx, convID)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("showing memory: no conversation %q in %s", convID, store.Path())
		}
		seq = sc.Seq
	}
	for _, ch := range chains {
		found = true
		if err := mw.chain(ctx, store, ch, convID, seq); err != nil {
			return err
		}
	}
	if !found {
		fmt.Fprintln(w, "this run has no cheatsheet: learn one with 'ac3 memory learn' (offline) or curate with --memory online")
	}
	return nil
}

type memoryWriter struct {
	w    io.Writer
	text bool
}

// sheet writes a cheatsheet's text when asked to.
func (m memoryWriter) sheet(s string) {
	if m.text {
		for line := range strings.SplitSeq(strings.TrimSpace(s), "\n") {
			fmt.Fprintf(m.w, "    | %s\n", line)
		}
	}
}

// chain writes where an online chain stands, and the step of convID (seq)
// when convID is set.
func (m memoryWriter) chain(ctx context.Context, store MetaStore, ch OnlineChain, convID string, seq int64) error {
	w := m.w
	hseq, hash, ok, err := OnlineHead(ctx, store, ch.ID)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "online %s (from turn %d; %s; %s):\n", ch.ID, ch.From, ch.Analyzer, ch.Memory)
	if !ok {
		fmt.Fprintln(w, "  no conversation learned from yet")
		return nil
	}
	head, _, err := OnlineStepAt(ctx, store, ch.ID, hseq)
	if err != nil {
		return err
	}
	sheet, err := OnlineCheatsheet(ctx, store, ch.ID, hash)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "  last learned from %s (seq %d): cheatsheet %s (%d words)\n", head.Conv, hseq, orNone(hash), len(strings.Fields(sheet)))
	if convID == "" {
		m.sheet(sheet)
		return nil
	}
	st, ok, err := OnlineStepAt(ctx, store, ch.ID, seq)
	if err != nil {
		return err
	}
	if !ok {
		fmt.Fprintf(w, "  %s (seq %d): not learned from yet\n", convID, seq)
		return nil
	}
	before, err := OnlineCheatsheet(ctx, store, ch.ID, st.Before)
	if err != nil {
		return err
	}
	after, err := OnlineCheatsheet(ctx, store, ch.ID, st.After)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "  %s (seq %d): step 2 was given cheatsheet %s (after seq %d)\n", convID, seq, orNone(st.Before), st.Prev)
	m.sheet(before)
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
	m.sheet(after)
	return nil
}

func orNone(hash string) string {
	if hash == "" {
		return "(empty)"
	}
	return hash
}
