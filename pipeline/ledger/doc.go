// Package ledger is a run's checkpoint store: one SQLite file that holds the
// run's settings, its input files and how far ingest got in each, the kept
// conversations, drop counts, quarantined records, and the units of work every
// stage produced, with their status and output.
//
// The file is the run: a stage reads what it needs from the ledger, and a unit
// of work is done only once the ledger has committed it, so a killed process
// loses nothing that was reported done. All writes go through one connection
// in batched transactions; reads use a separate pool, which WAL mode lets run
// beside the writer.
//
// The schema comes from the migrations package. Nothing secret is stored here.
package ledger
