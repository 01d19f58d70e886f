package curate

import "fmt"

// The offline memory's learning split (memory.Split) as the stage applies
// it: the strategies given the frozen cheatsheet leave out the
// conversations it was learned on.

// UsesOfflineMemory reports whether st is given a frozen cheatsheet (an
// AC3 operator built with Options.Memory), with or without an overlay.
func UsesOfflineMemory(st Strategy) bool {
	switch v := st.(type) {
	case *constraintsOverlay:
		return UsesOfflineMemory(v.inner)
	case *Operator:
		return v.sheet.Hash != ""
	}
	return false
}

// WithLearningSplit makes the strategies that use the offline cheatsheet
// leave out the conversations it was learned on (seq <= upTo): they record
// no context there, so nothing downstream (respond, judge) has theirs to
// work on, and results are measured only on conversations the cheatsheet
// did not learn from. The split goes into those strategies' versions, so
// forcing the learning conversations back in (upTo 0, the default) keys
// them apart. It returns s.
func (s *Stage) WithLearningSplit(upTo int64) *Stage {
	s.learnedUpTo = max(upTo, 0)
	return s
}

// excluded reports whether strategy st leaves conversation seq out.
func (s *Stage) excluded(st Strategy, seq int64) bool {
	return s.learnedUpTo > 0 && seq <= s.learnedUpTo && UsesOfflineMemory(st)
}

// splitTag is what the learning split adds to st's version.
func (s *Stage) splitTag(st Strategy) string {
	if s.learnedUpTo > 0 && UsesOfflineMemory(st) {
		return fmt.Sprintf(";eval>%d", s.learnedUpTo)
	}
	return ""
}
