// Package modelstages checks the model-backed stages as the engine runs
// them, with the real llm client against the in-process endpoint
// (pipeline/llm/llmtest). It has no code of its own; everything is in its
// tests:
//
//   - BenchmarkModelStages, the figures of issue 15: classify with the llm
//     annotator, curate with gated-reset, respond and judge, run with the
//     options the CLI uses by default, at 0.2 s, 1 s and 3 s latency with
//     concurrency 16 and 600 RPM. Each cell prints the calls per second the
//     server logged as a share of min(rpm/60, concurrency/latency), and the
//     most requests that arrived in any 60 s. Run it with
//
//     go test -run '^$' -bench ModelStages -benchtime 1x -timeout 40m ./run/bench/modelstages/
//
//     (-short skips the 3 s cells; each cell takes a little over a minute).
//
//   - BenchmarkPlannerAtScale, issue 9's check that the planner and the
//     limiter do not slow with size: classify over 1k and over 100k
//     conversations against an endpoint with no latency and high limits,
//     printing the calls/s of each and their ratio (target >= 0.9).
//
//   - BenchmarkPromptCache, issue 33's figures: the e2e config
//     (fixtures/configs/e2e.yaml) against the endpoint's emulated prompt
//     cache, printing per stage the share of input tokens served from the
//     cache, the share the dry run expected, and the spend against what it
//     would be with no cache, for one-line and for realistic answers;
//     TestPromptCacheShares holds its targets (at least 50% of the judge's
//     input and 30% of all input cached, with the e2e test's answers).
//
//     go test -run '^$' -bench '^BenchmarkPromptCache$' -benchtime 1x ./run/bench/modelstages/
//
//   - Tests that a stop (Ctrl-C, the budget) with the model window open
//     loses no paid answer and that the resumed run pays for nothing twice.
package modelstages
