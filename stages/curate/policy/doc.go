// Package policy is the adaptive strategy's scored policy: a logistic model
// of the chance that full context (fc) beats assistant omission (ao) at a
// turn, fitted on the run's own judge verdicts ('ac3 policy fit') and
// stored in the run's settings.
//
// The adaptive strategy in package curate computes a turn's features while
// curating and asks the policy for its score; this package holds the model,
// fitting it (L1 logistic regression, cross-validated) and storing it, and
// knows nothing of strategies.
package policy
