package analyze_test

import (
	"strings"
	"testing"
	"unicode"

	"github.com/ac3/ac3/stages/analyze"
)

// Step 2 reviews requirement by requirement; a model that answers the
// issues section with one "None" per requirement has found nothing, while
// any line with a finding keeps the section an issue.
func TestHasIssuesReadsPerRequirementLists(t *testing.T) {
	tests := []struct {
		issues string
		want   bool
	}{
		{"None", false},
		{"**None.**", false},
		{"", false},
		{"1. None\n2. None", false},
		{"- Requirement 1: none\n- Requirement 2: None.", false},
		{"Item 1 — None\n\nItem (2): None", false},
		{"#3: none", false},
		{"Requirementnone", true}, // one word, not a label and None
		{"Item none", false},
		{"(1) None\n(2) None", false},
		{"1. None\n2. Uses int instead of int64.", true},
		{"1. None of the tests pass", true},
		{"Requirement 2 is open: no test was written.", true},
		{"None of the requested output format is followed.", true},
		{"Issues:\nNone", true}, // a heading is not a label: read as a finding
		{"The query filters on the wrong year.", true},
	}
	for _, tc := range tests {
		if got := (analyze.Analysis{Issues: tc.issues}).HasIssues(); got != tc.want {
			t.Errorf("HasIssues(%q) = %v, want %v", tc.issues, got, tc.want)
		}
	}
}

// FuzzHasIssues: reading the issues section never panics, and a section
// with a word other than a label or None in it is always an issue, so no
// finding is dropped by the per-requirement reading.
func FuzzHasIssues(f *testing.F) {
	for _, s := range []string{"None", "1. None\n2. None", "Requirement 1: none", "- item 3 — None.", "1. None of it", "İtem 1: None", "\u212Aitem", "•\t(12) none", "Requirementnone"} {
		f.Add(s)
	}
	labels := map[string]bool{"none": true, "item": true, "requirement": true, "deliverable": true}
	f.Fuzz(func(t *testing.T, s string) {
		has := analyze.Analysis{Issues: s}.HasIssues()
		for _, w := range strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) }) {
			if !labels[strings.ToLower(w)] && !has {
				t.Fatalf("HasIssues(%q) = false, but it holds the word %q", s, w)
			}
		}
		if strings.TrimSpace(s) == analyze.None && has {
			t.Fatalf("HasIssues(%q) = true", s)
		}
	})
}
