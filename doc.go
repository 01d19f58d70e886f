// Package ac3 holds no code. Its comment is the map of the tree: the one place
// that states how the folders are layered, which layout_test.go enforces
// (every import of the module against the order below) and copies into the
// README, and which deps_test.go refines into a row of allowed imports per
// package.
//
// # Layout
//
// Each top-level folder is a layer. A package may import from its own folder
// and from the folders listed below its own, never from one above:
//
//	cmd/        the command line: flags, help, printing, exit status
//	run/        a whole run put together: the config file (run/config), Execute
//	            and Estimate (run), the report (run/report), the exports
//	            (run/export), convert (run/convert), the browser view
//	            (run/view), whole-command benchmarks (run/bench)
//	judge/      the judge stage: pairwise verdicts on respond's answers
//	stages/     one package per stage: filter, classify, constraints, pollution
//	            (sharing annotator), analyze, curate (the context strategies;
//	            curated, memory, policy, tally, inspect beside them), respond,
//	            lic (simulate, replay, grade), compint (measure, agreement)
//	io/         one package per file format (jsonl, parquetio, arrowipc,
//	            wildchat, sharegpt, sharelm, openaichat, lic), detect, compress, atomicfile
//	pipeline/   the ground every layer stands on: the engine (plan, run, commit,
//	            stop), conv (the domain types), record, ledger (the run file),
//	            llm (the model client, batch, llmtest), prompt, tokens, stats,
//	            ingest, progress, memgov, shard, synth, spell, cells
//	migrations/ the run file's schema, embedded SQL
//
// Folders without Go code: fixtures/ (sample data, labelled sets, bad records,
// configs), deploy/ (Kubernetes and Slurm manifests for sharded runs),
// scripts/ (the fuzz pass, DuckDB for tests, report screenshots).
package ac3
