package simulate

import (
	"encoding/json"
	"fmt"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/stages/lic/grade"
)

// Trajectory is what one simulate unit stores: one replicate of one
// instance's baseline conversation and the grade of its final answer.
type Trajectory struct {
	Instance  string         `json:"instance"` // the LiC task_id
	Task      string         `json:"task"`
	Replicate int            `json:"replicate"` // 1-based
	Mode      string         `json:"mode"`
	System    string         `json:"system"`
	Messages  []conv.Message `json:"messages"`
	// Shards are the shards as written, in the record's order (the
	// false-negative check compares the user's messages with them).
	Shards []string `json:"shards,omitempty"`
	// Revealed says, in ModeLiC, which shard each user message gave
	// (1-based, 0 for none); the other modes give shard k at turn k.
	Revealed []int         `json:"revealed,omitempty"`
	Model    string        `json:"model,omitempty"`
	Endpoint string        `json:"endpoint,omitempty"`
	Grade    *grade.Result `json:"grade,omitempty"`
	// Skipped says why the conversation was not simulated (not a LiC
	// record); the other fields are then empty.
	Skipped string `json:"skipped,omitempty"`
	// Unused says why this replicate was not simulated although the
	// instance was: its task runs fewer replicates (Options.TaskReplicates).
	// Nothing reads it as a trajectory.
	Unused string `json:"unused,omitempty"`
}

// Uncounted reports whether t is a replicate past its task's count in
// taskReplicates (lic.task_replicates): recorded unused, or simulated
// before the count was lowered. Neither the pool nor the report counts it.
func (t Trajectory) Uncounted(taskReplicates map[string]int) bool {
	k, ok := taskReplicates[t.Task]
	return t.Unused != "" || ok && t.Replicate > k
}

// Failed reports whether the baseline's final answer was graded wrong.
// An ungraded trajectory is neither failed nor passed.
func (t Trajectory) Failed() bool { return t.Grade != nil && t.Grade.Status == grade.Fail }

// Decode reads a stored simulate unit output.
func Decode(b []byte) (Trajectory, error) {
	var t Trajectory
	if err := json.Unmarshal(b, &t); err != nil {
		return t, fmt.Errorf("decoding trajectory: %w", err)
	}
	return t, nil
}
