package ledger

import (
	"context"
	"fmt"
	"io"
	"os"
)

// Doctor is 'ac3 doctor': it checks the run file at path and says what it
// found on out; when the file is damaged, or recoverTo is given, it counts
// (recoverTo "") or copies (into recoverTo, a new run file) every record it
// can read. It returns an error when the file is damaged and nothing was
// recovered, so a damaged run never passes for a sound one; a recovery that
// copied nothing leaves no file behind, since an empty run would pass for
// one.
func Doctor(ctx context.Context, path, recoverTo string, out io.Writer) error {
	size := "?"
	if st, err := os.Stat(path); err == nil {
		size = fmt.Sprintf("%.1f MB", float64(st.Size())/1e6)
	}
	fmt.Fprintf(out, "checking %s (%s): its length, every page's checksum, SQLite's integrity check\n", path, size)
	res, err := Check(ctx, path)
	if err != nil {
		return err
	}
	if !res.Summed && res.Pages > 0 {
		fmt.Fprintf(out, "note: %s was made before ac3 kept a checksum on every page, so a changed byte inside a record can pass this check; any command that writes the run (e.g. 'ac3 run' again) adds them\n", path)
	}
	if res.OK {
		fmt.Fprintf(out, "ok: %s is sound\n", path)
		if res.NoteCleared {
			fmt.Fprintf(out, "the damage noted earlier in %s%s is no longer there; the note was removed\n", path, DamageSuffix)
		}
		if recoverTo == "" {
			return nil
		}
	} else {
		fmt.Fprintf(out, "damaged: the check found %d problem(s):\n", len(res.Problems))
		for _, p := range res.Problems {
			fmt.Fprintf(out, "   %s\n", p)
		}
	}
	if recoverTo == "" {
		fmt.Fprintln(out, "\nwhat a recovery would keep (counted; nothing written):")
	} else {
		fmt.Fprintf(out, "\ncopying every readable record into %s\n", recoverTo)
	}
	rep, err := Salvage(ctx, path, recoverTo)
	if err != nil {
		return err
	}
	rep.WriteText(out)
	switch {
	case recoverTo == "":
		fmt.Fprintf(out, "\nto copy them into a new run: ac3 doctor --db %s --recover-to NEW.db\n", path)
		return fmt.Errorf("run file %s is damaged (%s); nothing was changed", path, res.FirstProblem())
	case !res.OK && rep.Copied() == 0:
		for _, suffix := range []string{"", "-wal", "-shm", LockSuffix} {
			os.Remove(recoverTo + suffix)
		}
		return fmt.Errorf("nothing could be recovered from %s (%s): no record could be read, so no new run was written; ingest the inputs into a new run to start again", path, res.FirstProblem())
	case rep.Lost():
		fmt.Fprintf(out, "\nrecovered %d records into %s (checked sound, every copied record read back); the records counted as lost above could not be read: run the same commands with --db %s to redo that work (answers already paid for are in its cache)\n", rep.Copied(), recoverTo, recoverTo)
	default:
		fmt.Fprintf(out, "\nrecovered every record into %s (checked sound, every copied record read back); run the same commands with --db %s\n", recoverTo, recoverTo)
	}
	return nil
}
