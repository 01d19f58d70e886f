// Package lic reads Lost in Conversation (microsoft/lost_in_conversation)
// sharded instructions: records with a task_id, a task and a list of shards.
// Each record becomes a conversation whose user turns are its shards in
// shard order, with no assistant turns; the rest of the record (question,
// answer, reference_sql, tests, ...) is kept in Meta for graders. Files are
// one JSON array (streamed) or JSON Lines.
package lic
