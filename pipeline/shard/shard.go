// Package shard splits a run over N processes: it parses a shard spec
// (--shard I/N, AC3_SHARD, or --shards N with the index a cluster engine
// gives each task), decides which conversations a shard owns, and names the
// shard's run file.
//
// A shard owns the conversations whose id hashes to it: FNV-1a (64-bit) of
// the conversation id's UTF-8 bytes, modulo N. The hash depends only on the
// id, never on input order or on which machine reads the file, so every
// shard of one run agrees on who owns what without talking to the others.
package shard

import (
	"fmt"
	"hash/fnv"
	"path/filepath"
	"strconv"
	"strings"
)

// Scheme names the hash, as it is recorded in a shard's run file; a merge
// refuses shards made with another scheme.
const Scheme = "fnv1a64(id) mod n"

// Spec is shard Index of Count (Index counted from 0). The zero Spec means
// the run is not sharded.
type Spec struct {
	Index, Count int
}

// Enabled reports whether s names a shard.
func (s Spec) Enabled() bool { return s.Count > 0 }

// String is "I/N", the form --shard takes.
func (s Spec) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// Of is the shard, of n, that owns the conversation id.
func Of(id string, n int) int {
	if n <= 1 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(id))
	return int(h.Sum64() % uint64(n))
}

// Owns reports whether shard s owns the conversation id. An unsharded
// spec owns everything.
func (s Spec) Owns(id string) bool {
	return !s.Enabled() || Of(id, s.Count) == s.Index
}

// Path is the run file of shard s for the configured run file db: the
// shard inserted before the extension (runs/demo.db becomes
// runs/demo.shard-2-of-4.db). An unsharded spec leaves db as it is.
func (s Spec) Path(db string) string {
	if !s.Enabled() {
		return db
	}
	ext := filepath.Ext(db)
	if strings.ContainsAny(ext, `/\`) {
		ext = ""
	}
	return fmt.Sprintf("%s.shard-%d-of-%d%s", strings.TrimSuffix(db, ext), s.Index, s.Count, ext)
}

// Parse reads "I/N" (I from 0, I < N).
func Parse(v string) (Spec, error) {
	i, n, ok := strings.Cut(strings.TrimSpace(v), "/")
	if !ok {
		return Spec{}, fmt.Errorf("shard %q: want I/N, e.g. 0/4 (I counts from 0)", v)
	}
	idx, err := strconv.Atoi(strings.TrimSpace(i))
	if err != nil {
		return Spec{}, fmt.Errorf("shard %q: the index %q is not a number", v, i)
	}
	cnt, err := strconv.Atoi(strings.TrimSpace(n))
	if err != nil {
		return Spec{}, fmt.Errorf("shard %q: the count %q is not a number", v, n)
	}
	return check(Spec{Index: idx, Count: cnt}, "shard "+strconv.Quote(v))
}

func check(s Spec, what string) (Spec, error) {
	switch {
	case s.Count < 1:
		return Spec{}, fmt.Errorf("%s: the shard count must be at least 1, not %d", what, s.Count)
	case s.Index < 0 || s.Index >= s.Count:
		return Spec{}, fmt.Errorf("%s: the index must be from 0 to %d, not %d", what, s.Count-1, s.Index)
	}
	return s, nil
}

// The environment variables Resolve reads.
const (
	EnvShard      = "AC3_SHARD"            // I/N, as --shard
	EnvK8sIndex   = "JOB_COMPLETION_INDEX" // Kubernetes Indexed Job
	EnvSlurmID    = "SLURM_ARRAY_TASK_ID"
	EnvSlurmMin   = "SLURM_ARRAY_TASK_MIN"
	EnvSlurmCount = "SLURM_ARRAY_TASK_COUNT"
)

// Resolve is the shard a process runs as, from --shard (flag, "" when not
// given), --shards (shards, 0 when not given) and the environment:
//   - --shard I/N, or AC3_SHARD=I/N, names the shard directly;
//   - --shards N takes I from JOB_COMPLETION_INDEX, else from
//     SLURM_ARRAY_TASK_ID less SLURM_ARRAY_TASK_MIN (Slurm arrays may
//     start at any id);
//   - none of them: the run is not sharded.
//
// Values that disagree are an error naming both, never a silent choice.
func Resolve(flag string, shards int, getenv func(string) string) (Spec, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	var have []Spec
	var from []string
	if flag != "" {
		s, err := Parse(flag)
		if err != nil {
			return Spec{}, fmt.Errorf("--shard: %w", err)
		}
		have, from = append(have, s), append(from, "--shard "+s.String())
	}
	if v := getenv(EnvShard); v != "" {
		s, err := Parse(v)
		if err != nil {
			return Spec{}, fmt.Errorf("%s: %w", EnvShard, err)
		}
		have, from = append(have, s), append(from, EnvShard+"="+s.String())
	}
	switch {
	case shards < 0:
		return Spec{}, fmt.Errorf("--shards must be 0 (not sharded) or more, not %d", shards)
	case shards > 0:
		s, src, err := fromEngine(shards, getenv)
		if err != nil {
			return Spec{}, err
		}
		have, from = append(have, s), append(from, src)
	}
	if len(have) == 0 {
		return Spec{}, nil
	}
	for i := 1; i < len(have); i++ {
		if have[i] != have[0] {
			return Spec{}, fmt.Errorf("conflicting shards: %s but %s", from[0], from[i])
		}
	}
	return have[0], nil
}

// fromEngine is shard ? of n with the index the cluster engine sets.
func fromEngine(n int, getenv func(string) string) (Spec, string, error) {
	what := fmt.Sprintf("--shards %d", n)
	if v := getenv(EnvK8sIndex); v != "" {
		i, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return Spec{}, "", fmt.Errorf("%s: %s=%q is not a number", what, EnvK8sIndex, v)
		}
		s, err := check(Spec{Index: i, Count: n}, fmt.Sprintf("%s with %s=%d", what, EnvK8sIndex, i))
		return s, fmt.Sprintf("%s (%s=%d)", what, EnvK8sIndex, i), err
	}
	v := getenv(EnvSlurmID)
	if v == "" {
		return Spec{}, "", fmt.Errorf("%s: no shard index: set %s (Kubernetes Indexed Job) or %s (Slurm array), or pass --shard I/N", what, EnvK8sIndex, EnvSlurmID)
	}
	id, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return Spec{}, "", fmt.Errorf("%s: %s=%q is not a number", what, EnvSlurmID, v)
	}
	low := 0
	if m := getenv(EnvSlurmMin); m != "" {
		if low, err = strconv.Atoi(strings.TrimSpace(m)); err != nil {
			return Spec{}, "", fmt.Errorf("%s: %s=%q is not a number", what, EnvSlurmMin, m)
		}
	}
	if c := getenv(EnvSlurmCount); c != "" {
		if cnt, err := strconv.Atoi(strings.TrimSpace(c)); err != nil || cnt != n {
			return Spec{}, "", fmt.Errorf("%s but the Slurm array has %s=%s tasks; make them agree", what, EnvSlurmCount, c)
		}
	}
	src := fmt.Sprintf("%s (%s=%d, %s=%d)", what, EnvSlurmID, id, EnvSlurmMin, low)
	s, err := check(Spec{Index: id - low, Count: n}, src)
	return s, src, err
}

// Divide is a limit (requests per minute, tokens per minute, concurrency)
// split among n shards: rounded up, at least 1; 0 (no limit) stays 0.
func Divide(v, n int) int {
	if v <= 0 || n <= 1 {
		return v
	}
	return max(1, (v+n-1)/n)
}
