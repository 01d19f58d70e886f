// Package grade decides whether an assistant's final answer to a Lost in
// Conversation (LiC) instance is correct, for the four tasks AC3 reports:
// math (GSM8K), database (Spider), actions (BFCL) and code (HumanEval,
// LiveCodeBench). It is what the LiC replay stage calls on each
// regenerated final turn.
//
// Every grade is a Result: pass, fail or not graded, with the artifact
// that was graded (the number, the query, the calls, the code), how it was
// found in the reply, the reference, how the comparison was made, and why.
// The stage stores it with the unit and inspect prints it. A wrong or
// unreadable answer is a failed Result, never an error; errors are kept for
// instances that cannot be graded (ErrBadInstance), a cancelled context,
// and code execution asked for on a machine without python3
// (ErrNoPython).
//
// The instance is an Instance: the record's own fields under LiC's names.
// ParseInstance reads it from a raw record or from the Meta that io/lic
// keeps of one (every field but the shards), so this package needs nothing
// from the readers.
//
// # How each task is graded
//
// Math. The reply's number is the first one after its last AnswerPrefix
// ("Final answer:"), which the task prompt asks for; else after "####";
// else inside the last \boxed{}; else the last number in the reply. The
// reference is the number after the GSM8K solution's "####". They are
// compared as numbers (commas, currency signs, percent signs, fractions
// and trailing words understood), within 1e-6. LiC itself asks a model to
// extract the answer and compares strings; AC3's v2 prompts replaced that
// with a fixed prefix for the reasons this grader follows.
//
// Database. The query is the last ```sql block. It runs with SQLite
// (go-sqlite3) and its result is compared with the reference query's as
// LiC compares them: two empty results match; otherwise rows must be equal
// as multisets, in order only when the reference has ORDER BY, with the
// columns in any order. Like LiC, DISTINCT is removed from both queries and,
// when the query as written does not match, the reference's literal values
// are plugged into the query's value slots (up to 100 combinations), so
// the query's shape is graded rather than how it spells values;
// Options.KeepDistinct and Options.NoPlugValues turn these off. With
// Spider's database files (Options.DBDir) the queries run on every
// <db_id>/*.sqlite there, opened read-only. Without them, the schema is
// built from schema_sql (or, where SQLite rejects it, from schema_tables)
// and filled Options.Fillings times with seeded random rows; a query counts
// only if it matches on all of them, in the spirit of Spider's test-suite
// accuracy. The rows draw partly from the literals of both queries (tied
// to the columns they are compared with, numbers with their neighbours),
// and joined columns share value pools, so WHERE clauses and joins find
// rows; the Result says how many fillings gave the reference any rows.
// A query that does not parse, does not run, tries to write, or runs past
// Options.QueryTimeout fails.
//
// Actions. Calls are read from the reply in Python call syntax or JSON
// and checked with BFCL's AST rules against reference_answer, which gives
// each argument's allowed values: the documented type must hold (an int is
// accepted for a float, a bool is not an int, a tuple is not a list),
// strings compare without case, spaces and ,./-_*^, and an empty string
// among the allowed values marks an argument as optional. The calls must
// pair one to one with the expected calls in any order.
//
// Code. The function is the last ```python block's. It runs in a python3
// subprocess against the instance's test cases and, for HumanEval, its
// check(candidate); SANDBOX.md says what the sandbox does and does not
// protect against. Code runs only when Options.AllowExec is set; otherwise
// code answers are NotGraded.
//
// What does not live here: simulating or replaying conversations, the task
// prompts (they use AnswerPrefix), difficulty selection and the accuracy
// report.
package grade
