// Package ledger is a run's checkpoint store: one SQLite file that holds the
// run's settings, its input files and how far ingest got in each, the kept
// conversations, drop counts, quarantined records, and the units of work every
// stage produced, with their status and output.
//
// The file is the run: a stage reads what it needs from the ledger, and a unit
// of work is done only once the ledger has committed it, so a killed process
// loses nothing that was reported done. All writes go through one connection
// in batched transactions; reads use a separate pool, which WAL mode lets run
// beside the writer. Answers and call rows of model calls that finish at the
// same moment share one transaction too, and each caller returns only once
// its own row is committed.
//
// Tables that grow with the run (units, cached answers, call rows,
// conversations) are stored in the order they are written, with any hash
// they are found by in an index beside them: a commit appends to the end of
// each table instead of rewriting a random page per row, so a stage does not
// slow as its run grows.
//
// One process writes a run file at a time: a writer's Open takes an OS lock
// on RUN.db.lock that ends with the process (kill -9 included), and a second
// writer is refused at once with ErrLocked naming the holder. Read-only opens
// take no lock.
//
// Every page of a run file carries a checksum in bytes its header reserves
// at the end of each page, kept and checked by the VFS in package pagesum on
// every page SQLite writes or reads: a byte changed anywhere in the file is
// an error from the first query that reads its page, never a wrong row (see
// checksums.go for why pages and not rows). A run file made before this is
// rewritten with the sums by its first writer.
//
// Failures a command must not mistake for ordinary errors are typed and come
// from every method: ErrDamaged (a page fails its checksum, SQLite reports
// corruption, or stored data no longer decodes; the first finding is noted in
// RUN.db.damaged so every later command refuses the file until Check finds it
// sound again), ErrDiskFull (the commit was rolled back whole; the run resumes
// once space is freed), ErrLocked, and ErrWALRemoved (RUN.db-wal was removed
// under a writer: its commits are saved into the file and writing stops).
// Check reads the whole file (its length, every page's sum, SQLite's
// integrity check) and Salvage copies what is readable of a damaged run into
// a new one and reads it back; `ac3 doctor` wires both.
//
// Progress counts, per planned stage variant, the tasks done, failed and never
// attempted and the failed units grouped by reason, from indexes only.
//
// The schema comes from the migrations package. Nothing secret is stored here.
package ledger
