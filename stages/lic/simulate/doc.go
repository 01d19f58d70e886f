// Package simulate makes the full-context baseline trajectories of Lost in
// Conversation (LiC) instances, the fixed prefixes a replay regenerates the
// final turn of.
//
// For each instance (an ingested LiC record, whose user turns are its
// shards) and each replicate, the stage plays the conversation out: turn k
// reveals shard k, either verbatim (ModeVerbatim) or rephrased by a user
// simulator (the user_sim role, ModeModel), and the respondent answers with
// the whole conversation so far under the task's system prompt (Prompt).
// The first turn is the first shard as written in both modes, as LiC does.
// The final answer is graded (package grade) and stored with the
// trajectory, so a pool can be selected by how often the baseline failed.
//
// Replicates are variants ("r1", "r2", ...): each is recorded on its own,
// so a run that stops resumes replicate by replicate, and every model call
// of a replicate is cached, so redoing an unfinished replicate costs
// nothing for the turns already answered.
//
// Trajectories then become conversations of the run (Trajectories, a
// pipeline.Visit for pipeline.Derive), so every strategy, respondent,
// annotation and export applies to them.
package simulate
