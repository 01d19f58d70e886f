package shard

import (
	"strings"
	"testing"
)

// The owner of an id must never change between versions: shards of one
// run made by two builds would otherwise split the conversations
// differently. These are pinned values of FNV-1a 64 mod n.
func TestOfIsStable(t *testing.T) {
	for _, tc := range []struct {
		id   string
		n    int
		want int
	}{
		{"", 4, int(uint64(14695981039346656037) % 4)},
		{"a", 4, int(uint64(0xaf63dc4c8601ec8c) % 4)},
		{"foobar", 4, int(uint64(0x85944171f73967e8) % 4)},
		{"foobar", 7, int(uint64(0x85944171f73967e8) % 7)},
		{"anything", 1, 0},
	} {
		if got := Of(tc.id, tc.n); got != tc.want {
			t.Errorf("Of(%q, %d) = %d, want %d", tc.id, tc.n, got, tc.want)
		}
	}
}

func TestOfGolden(t *testing.T) {
	// Conversation ids of the bundled WildChat sample style, with their
	// owners among 4 shards, pinned.
	want := map[string]int{"c0": 2, "c1": 1, "c2": 0, "c3": 3, "wildchat-000001": 1, "7f3c1e2a9b": 2, "conversation/with/slashes": 1, "日本語": 3}
	for id, w := range want {
		if got := Of(id, 4); got != w {
			t.Errorf("Of(%q, 4) = %d, want %d", id, got, w)
		}
	}
}

func TestOwnsPartitions(t *testing.T) {
	for i := 0; i < 1000; i++ {
		id := strings.Repeat("x", i%7) + string(rune('a'+i%26)) + string(rune('0'+i%10)) + string(rune(i))
		owners := 0
		for s := 0; s < 5; s++ {
			if (Spec{Index: s, Count: 5}).Owns(id) {
				owners++
			}
		}
		if owners != 1 {
			t.Fatalf("%q has %d owners among 5 shards, want 1", id, owners)
		}
	}
	if !(Spec{}).Owns("x") {
		t.Error("an unsharded run must own every conversation")
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Spec
		err  string
	}{
		{"0/4", Spec{0, 4}, ""},
		{" 3/4 ", Spec{3, 4}, ""},
		{"0/1", Spec{0, 1}, ""},
		{"4/4", Spec{}, "from 0 to 3"},
		{"-1/4", Spec{}, "from 0 to 3"},
		{"0/0", Spec{}, "at least 1"},
		{"1", Spec{}, "want I/N"},
		{"a/4", Spec{}, "not a number"},
		{"1/b", Spec{}, "not a number"},
	} {
		got, err := Parse(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Parse(%q) error %v, want one with %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Parse(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestResolve(t *testing.T) {
	for _, tc := range []struct {
		name   string
		flag   string
		shards int
		env    map[string]string
		want   Spec
		err    string
	}{
		{name: "nothing", want: Spec{}},
		{name: "flag", flag: "1/4", want: Spec{1, 4}},
		{name: "env", env: map[string]string{EnvShard: "2/4"}, want: Spec{2, 4}},
		{name: "flag and env agree", flag: "2/4", env: map[string]string{EnvShard: "2/4"}, want: Spec{2, 4}},
		{name: "flag and env differ", flag: "1/4", env: map[string]string{EnvShard: "2/4"}, err: "conflicting shards"},
		{name: "kubernetes", shards: 4, env: map[string]string{EnvK8sIndex: "3"}, want: Spec{3, 4}},
		{name: "kubernetes out of range", shards: 4, env: map[string]string{EnvK8sIndex: "4"}, err: "from 0 to 3"},
		{name: "slurm", shards: 4, env: map[string]string{EnvSlurmID: "2"}, want: Spec{2, 4}},
		{name: "slurm from 1", shards: 4, env: map[string]string{EnvSlurmID: "4", EnvSlurmMin: "1", EnvSlurmCount: "4"}, want: Spec{3, 4}},
		{name: "slurm count differs", shards: 4, env: map[string]string{EnvSlurmID: "1", EnvSlurmCount: "8"}, err: "make them agree"},
		{name: "shards without index", shards: 4, err: "no shard index"},
		{name: "negative shards", shards: -1, err: "0 (not sharded) or more"},
		{name: "shards and flag differ", flag: "0/4", shards: 4, env: map[string]string{EnvK8sIndex: "1"}, err: "conflicting shards"},
		{name: "shards count differs from flag", flag: "1/2", shards: 4, env: map[string]string{EnvK8sIndex: "1"}, err: "conflicting shards"},
		{name: "shards and flag agree", flag: "1/4", shards: 4, env: map[string]string{EnvK8sIndex: "1"}, want: Spec{1, 4}},
		{name: "shards 0 ignores engine", env: map[string]string{EnvK8sIndex: "1"}, want: Spec{}},
		{name: "bad k8s index", shards: 2, env: map[string]string{EnvK8sIndex: "x"}, err: "not a number"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Resolve(tc.flag, tc.shards, func(k string) string { return tc.env[k] })
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one with %q", err, tc.err)
				}
				if strings.Contains(err.Error(), "\n") {
					t.Fatalf("error %q is more than one line", err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("= %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestPath(t *testing.T) {
	for _, tc := range []struct {
		db   string
		s    Spec
		want string
	}{
		{"runs/demo.db", Spec{2, 4}, "runs/demo.shard-2-of-4.db"},
		{"runs/demo", Spec{0, 2}, "runs/demo.shard-0-of-2"},
		{"a.b/run", Spec{1, 2}, "a.b/run.shard-1-of-2"},
		{"runs/demo.db", Spec{}, "runs/demo.db"},
	} {
		if got := tc.s.Path(tc.db); got != tc.want {
			t.Errorf("%v.Path(%q) = %q, want %q", tc.s, tc.db, got, tc.want)
		}
	}
}

func TestDivide(t *testing.T) {
	for _, tc := range []struct{ v, n, want int }{
		{600, 4, 150}, {10, 4, 3}, {1, 4, 1}, {0, 4, 0}, {16, 1, 16}, {7, 0, 7},
	} {
		if got := Divide(tc.v, tc.n); got != tc.want {
			t.Errorf("Divide(%d, %d) = %d, want %d", tc.v, tc.n, got, tc.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"0/4", "3/4", "4/4", "/", "x/y", "-1/-1", "1/99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		s, err := Parse(v)
		if err != nil {
			return
		}
		if s.Count < 1 || s.Index < 0 || s.Index >= s.Count {
			t.Fatalf("Parse(%q) accepted %v", v, s)
		}
		if back, err := Parse(s.String()); err != nil || back != s {
			t.Fatalf("Parse(%q) = %v does not round-trip: %v, %v", v, s, back, err)
		}
	})
}
