package ledger

import (
	"fmt"
	"slices"
	"strings"
)

// OriginSource is the origin of every ingested conversation. Conversations
// the run makes itself (see AddDerived) carry the name of the step that
// made them instead, e.g. "lic-sim" or "compint".
const OriginSource = "source"

// maxOrigin bounds an origin's length; it names a step, not data.
const maxOrigin = 64

// ValidOrigin reports whether name can be an origin: 1 to 64 characters of
// lowercase letters, digits, '-', '_' and '.', starting with a letter or
// digit. Origins go into run settings and input names, so they are kept
// plain.
func ValidOrigin(name string) error {
	if name == "" || len(name) > maxOrigin {
		return fmt.Errorf("origin %q: want 1 to %d characters", name, maxOrigin)
	}
	for i, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
		case i > 0 && (r == '-' || r == '_' || r == '.'):
		default:
			return fmt.Errorf("origin %q: want lowercase letters, digits, '-', '_' and '.', starting with a letter or digit", name)
		}
	}
	return nil
}

// Scope is the set of conversation origins a stage, a count or a page walk
// covers. The zero Scope covers every origin, whatever origins the run has
// now or gets later; Origins builds a scope of named origins.
type Scope struct {
	origins []string // sorted, distinct; nil for every origin
}

// AllOrigins is the scope of every conversation, the zero Scope.
var AllOrigins = Scope{}

// Origins returns the scope of the named origins. With no names it is
// AllOrigins: an empty list in a config means "no restriction", never
// "nothing". A name that is not a valid origin is an error.
func Origins(names ...string) (Scope, error) {
	if len(names) == 0 {
		return AllOrigins, nil
	}
	out := make([]string, 0, len(names))
	for _, n := range names {
		n = strings.TrimSpace(n)
		if err := ValidOrigin(n); err != nil {
			return Scope{}, fmt.Errorf("reading scope: %w", err)
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return Scope{origins: slices.Compact(out)}, nil
}

// MustOrigins is Origins for names known to be valid (constants); it
// panics on an invalid one.
func MustOrigins(names ...string) Scope {
	s, err := Origins(names...)
	if err != nil {
		panic(err)
	}
	return s
}

// All reports whether s covers every origin.
func (s Scope) All() bool { return s.origins == nil }

// Has reports whether s covers origin.
func (s Scope) Has(origin string) bool {
	if s.All() {
		return true
	}
	_, ok := slices.BinarySearch(s.origins, origin)
	return ok
}

// List returns the origins of s in sorted order, nil for AllOrigins.
func (s Scope) List() []string { return slices.Clone(s.origins) }

// Equal reports whether s and o cover the same origins.
func (s Scope) Equal(o Scope) bool {
	return s.All() == o.All() && slices.Equal(s.origins, o.origins)
}

// Intersect returns the origins both s and o cover. It reports false when
// they share none.
func (s Scope) Intersect(o Scope) (Scope, bool) {
	switch {
	case s.All():
		return o, true
	case o.All():
		return s, true
	}
	var out []string
	for _, n := range s.origins {
		if o.Has(n) {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return Scope{}, false
	}
	return Scope{origins: out}, true
}

// String renders s as a config would write it: "all", or the origins
// joined by commas.
func (s Scope) String() string {
	if s.All() {
		return "all"
	}
	return strings.Join(s.origins, ",")
}
