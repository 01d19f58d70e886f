// Package batch sends a run's model requests through an endpoint's batch
// API (OpenAI's, and the providers' that copy it) and reads and writes the
// batch JSONL files that API and vLLM's offline run_batch take.
//
// In batch mode the model client does not send a request the cache cannot
// answer: it queues it in the run file (ledger.BatchQueue) and the unit
// stays pending. After a stage's pass, a Driver writes the queued requests
// as input files (custom_id is the request's cache key), uploads them,
// creates the batches, polls them and imports their output and error files
// into the same cache the online path fills; the stage then runs again and
// finds its answers there. Requests a batch did not answer go to the
// configured fallback: a new batch, or online.
//
// The driver does not know which stage queued a request: everything queued
// when Submit runs goes into the same round, one input file per endpoint
// (a model of the config) split at the API's limits, so stages that do not
// read each other's answers can queue first and share a round. Polls start
// two seconds apart and the wait doubles up to Options.Poll; a batch found
// over is imported before the next wait.
//
// Points where a killed process leaves a batch, and what the next run does:
//
//	prepared   requests assigned in the run file; the file is (re)uploaded
//	uploaded   file id recorded; the batch is looked for by its input file
//	           among the endpoint's batches, and created only if absent
//	submitted  batch id recorded; polled again
//	ended      the endpoint said it is over; every line is imported in the
//	           transaction that settles its request, so a line imported
//	           before the kill is skipped after it
//	imported   done
package batch
