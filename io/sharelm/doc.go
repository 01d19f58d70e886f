// Package sharelm reads ShareLM (shachardon/ShareLM on Hugging Face): human–
// model conversations pooled from several sources in one format, the input
// Huang et al. report results on beside WildChat. Each record holds
// conversation_id, conversation (a list of {content, role}), model_name,
// timestamp, source, user_metadata and conversation_metadata (language,
// toxic, redacted, … as strings).
package sharelm
