package grade_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/ac3/ac3/stages/lic/grade"
)

func sqlAnswer(q string) string {
	return "Here is the query:\n\n```sql\n" + q + "\n```\n\nIt lists what you asked for."
}

func gradeOK(t *testing.T, g *grade.Grader, in *grade.Instance, answer string) grade.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := g.Grade(ctx, in, answer)
	if err != nil {
		t.Fatalf("%s: grading %q: %v", in.TaskID, answer, err)
	}
	return res
}

func TestDatabaseReferenceMatchesItself(t *testing.T) {
	g := grade.New(grade.Options{})
	for _, in := range sample(t, grade.TaskDatabase) {
		res := gradeOK(t, g, in, sqlAnswer(in.ReferenceSQL))
		if res.Status != grade.Pass {
			t.Errorf("%s: reference graded %s: %s", in.TaskID, res.Status, res.Reason)
		}
		if !strings.HasPrefix(res.Check, "generated databases: 8 random fillings") {
			t.Errorf("%s: check = %q", in.TaskID, res.Check)
		}
		if res.Artifact != in.ReferenceSQL || res.Extraction != grade.ExtractedSQLFence {
			t.Errorf("%s: artifact %q found by %q", in.TaskID, res.Artifact, res.Extraction)
		}
	}
}

// TestDatabaseGeneratedDataExercisesTheReference guards the point of the
// fillings: the reference must return rows on most of them, or any query
// returning nothing would pass.
func TestDatabaseGeneratedDataExercisesTheReference(t *testing.T) {
	g := grade.New(grade.Options{})
	for _, in := range sample(t, grade.TaskDatabase) {
		res := gradeOK(t, g, in, sqlAnswer(in.ReferenceSQL))
		var k, n int
		const say = "the reference gives a non-empty, non-zero result on "
		i := strings.Index(res.Check, say)
		if i < 0 {
			t.Fatalf("%s: no count in %q", in.TaskID, res.Check)
		}
		if _, err := fmtSscanf(res.Check[i+len(say):], "%d of %d", &k, &n); err != nil {
			t.Fatal(err)
		}
		if k*4 < n*3 {
			t.Errorf("%s: the reference gives a usable result on only %d of %d databases", in.TaskID, k, n)
		}
	}
}

func TestDatabaseAnswers(t *testing.T) {
	plug := grade.New(grade.Options{})
	strict := grade.New(grade.Options{NoPlugValues: true})
	tests := []struct {
		id, sql string
		plug    grade.Status // with LiC's value plugging (the default)
		strict  grade.Status // without it
	}{
		// equivalent formulations pass
		{"sharded-spider-val-633-medium", "select tv_channel.country from cartoon join tv_channel on tv_channel.id = cartoon.channel where cartoon.written_by = 'Todd Casey';", grade.Pass, grade.Pass},
		{"sharded-spider-val-946-medium", "SELECT p.first_name, t.date_of_treatment FROM Treatments t, Professionals p WHERE t.professional_id = p.professional_id", grade.Pass, grade.Pass},
		{"sharded-spider-val-982-extra", "SELECT COUNT(*) FROM Professionals p WHERE NOT EXISTS (SELECT 1 FROM Treatments t WHERE t.professional_id = p.professional_id)", grade.Pass, grade.Pass},
		{"sharded-spider-val-701-medium", "SELECT contestant_name FROM CONTESTANTS WHERE contestant_name LIKE '%al%'", grade.Pass, grade.Pass},
		// LiC removes DISTINCT from both queries before comparing
		{"sharded-spider-val-53-hard", "SELECT count(DISTINCT T2.petid) FROM student AS T1 JOIN has_pet AS T2 ON T1.stuid = T2.stuid JOIN pets AS T3 ON T2.petid = T3.petid WHERE T1.sex = 'F' AND T3.pettype = 'dog'", grade.Pass, grade.Pass},
		// wrong shapes fail
		{"sharded-spider-val-633-medium", "SELECT T1.country FROM TV_Channel AS T1 JOIN cartoon AS T2 ON T1.id = T2.Channel", grade.Fail, grade.Fail},
		{"sharded-spider-val-633-medium", "SELECT T1.series_name FROM TV_Channel AS T1 JOIN cartoon AS T2 ON T1.id = T2.Channel WHERE T2.written_by = 'Todd Casey'", grade.Fail, grade.Fail},
		{"sharded-spider-val-701-medium", "select contestant_name from contestants", grade.Fail, grade.Fail},
		{"sharded-spider-val-982-extra", "SELECT count(*) FROM Professionals", grade.Fail, grade.Fail},
		{"sharded-spider-val-982-extra", "SELECT count(*) FROM Professionals WHERE professional_id IN (SELECT professional_id FROM Treatments)", grade.Fail, grade.Fail},
		{"sharded-spider-val-946-medium", "SELECT T1.date_of_treatment, T2.last_name FROM Treatments AS T1 JOIN Professionals AS T2 ON T1.professional_id = T2.professional_id", grade.Fail, grade.Fail},
		{"sharded-spider-val-53-hard", "SELECT count(*) FROM student AS T1 JOIN has_pet AS T2 ON T1.stuid = T2.stuid JOIN pets AS T3 ON T2.petid = T3.petid WHERE T3.pettype = 'dog'", grade.Fail, grade.Fail},
		// constant answers that match an uninformative reference result
		{"sharded-spider-val-53-hard", "SELECT 0", grade.Fail, grade.Fail},
		{"sharded-spider-val-53-hard", "SELECT count(*) FROM student AS T1 JOIN has_pet AS T2 ON T1.stuid = T2.stuid WHERE T1.sex = 'M' AND T1.age > 20", grade.Fail, grade.Fail},
		{"sharded-spider-val-982-extra", "SELECT count(*) FROM Professionals WHERE 1 = 0", grade.Fail, grade.Fail},
		// wrong values: LiC plugs the reference's values into the
		// prediction's slots, so only the shape is graded
		{"sharded-spider-val-53-hard", "SELECT count(*) FROM student AS T1 JOIN has_pet AS T2 ON T1.stuid = T2.stuid JOIN pets AS T3 ON T2.petid = T3.petid WHERE T1.sex = 'M' AND T3.pettype = 'dog'", grade.Pass, grade.Fail},
		{"sharded-spider-val-633-medium", "SELECT T1.country FROM TV_Channel AS T1 JOIN cartoon AS T2 ON T1.id = T2.Channel WHERE T2.written_by = 'todd casey'", grade.Pass, grade.Fail},
		// queries that do not run are wrong, not errors
		{"sharded-spider-val-53-hard", "SELECT count(*) FROM students", grade.Fail, grade.Fail},
		{"sharded-spider-val-53-hard", "SELEC count(*) FROM student", grade.Fail, grade.Fail},
		{"sharded-spider-val-53-hard", "DROP TABLE student", grade.Fail, grade.Fail},
		{"sharded-spider-val-53-hard", "SELECT 1; DELETE FROM student", grade.Fail, grade.Fail},
		{"sharded-spider-val-53-hard", "WITH x AS (SELECT 1) DELETE FROM student", grade.Fail, grade.Fail},
	}
	for _, tt := range tests {
		in := byID(t, grade.TaskDatabase, tt.id)
		if res := gradeOK(t, plug, in, sqlAnswer(tt.sql)); res.Status != tt.plug {
			t.Errorf("%s: %s\n  with value plugging: %s (%s); want %s", tt.id, tt.sql, res.Status, res.Reason, tt.plug)
		}
		if res := gradeOK(t, strict, in, sqlAnswer(tt.sql)); res.Status != tt.strict {
			t.Errorf("%s: %s\n  without value plugging: %s (%s); want %s", tt.id, tt.sql, res.Status, res.Reason, tt.strict)
		}
	}
}

func TestDatabaseKeepDistinct(t *testing.T) {
	in := byID(t, grade.TaskDatabase, "sharded-spider-val-946-medium")
	q := "SELECT DISTINCT T2.first_name, T1.date_of_treatment FROM Treatments AS T1 JOIN Professionals AS T2 ON T1.professional_id = T2.professional_id"
	// DISTINCT only matters where rows repeat; the generated data has
	// repeats on purpose, so keeping DISTINCT must tell these apart.
	if res := gradeOK(t, grade.New(grade.Options{}), in, sqlAnswer(q)); res.Status != grade.Pass {
		t.Errorf("DISTINCT removed: %s (%s); want pass", res.Status, res.Reason)
	}
	if res := gradeOK(t, grade.New(grade.Options{KeepDistinct: true}), in, sqlAnswer(q)); res.Status != grade.Fail {
		t.Errorf("DISTINCT kept: %s (%s); want fail", res.Status, res.Reason)
	}
}

func TestDatabaseOrderMatters(t *testing.T) {
	in := &grade.Instance{TaskID: "order", Task: grade.TaskDatabase, DBID: "x",
		SchemaSQL:    "CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT, age INTEGER);",
		ReferenceSQL: "SELECT name FROM people ORDER BY age"}
	g := grade.New(grade.Options{})
	if res := gradeOK(t, g, in, sqlAnswer("SELECT name FROM people ORDER BY age, id")); res.Status != grade.Pass {
		t.Errorf("same order: %s (%s)", res.Status, res.Reason)
	}
	res := gradeOK(t, g, in, sqlAnswer("SELECT name FROM people ORDER BY age DESC"))
	if res.Status != grade.Fail || !strings.Contains(res.Reason, "order") {
		t.Errorf("reversed order: %s (%s); want a fail about order", res.Status, res.Reason)
	}
	// without ORDER BY in the reference, order does not count
	in.ReferenceSQL = "SELECT name FROM people"
	if res := gradeOK(t, g, in, sqlAnswer("SELECT name FROM people ORDER BY age DESC")); res.Status != grade.Pass {
		t.Errorf("order-free reference: %s (%s)", res.Status, res.Reason)
	}
}

func TestDatabaseTimeLimit(t *testing.T) {
	in := byID(t, grade.TaskDatabase, "sharded-spider-val-53-hard")
	g := grade.New(grade.Options{QueryTimeout: 300 * time.Millisecond, Fillings: 1})
	// this query never ends, so it always meets the limit
	res := gradeOK(t, g, in, sqlAnswer("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"))
	if res.Status != grade.Fail || !strings.Contains(res.Reason, "time limit") {
		t.Errorf("got %s (%s); want a time-limit fail", res.Status, res.Reason)
	}
}

func TestDatabaseCancelled(t *testing.T) {
	in := byID(t, grade.TaskDatabase, "sharded-spider-val-53-hard")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := grade.New(grade.Options{}).Grade(ctx, in, sqlAnswer(in.ReferenceSQL)); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v; want context.Canceled", err)
	}
}

func TestDatabaseNoQuery(t *testing.T) {
	in := byID(t, grade.TaskDatabase, "sharded-spider-val-53-hard")
	for _, a := range []string{"Could you tell me which table holds the pets?", "```python\nprint(1)\n```", "```sql\n\n```"} {
		if res := gradeOK(t, grade.New(grade.Options{}), in, a); res.Status != grade.Fail {
			t.Errorf("%q: %s (%s); want fail", a, res.Status, res.Reason)
		}
	}
}

func TestDatabaseBadInstances(t *testing.T) {
	g := grade.New(grade.Options{})
	for _, in := range []*grade.Instance{
		{TaskID: "no-ref", Task: grade.TaskDatabase, SchemaSQL: "CREATE TABLE t (a INT);"},
		{TaskID: "no-schema", Task: grade.TaskDatabase, ReferenceSQL: "SELECT 1"},
		{TaskID: "bad-schema", Task: grade.TaskDatabase, ReferenceSQL: "SELECT 1", SchemaSQL: "CREATE TABLE ("},
		{TaskID: "ref-not-query", Task: grade.TaskDatabase, ReferenceSQL: "DELETE FROM t", SchemaSQL: "CREATE TABLE t (a INT);"},
	} {
		if _, err := g.Grade(context.Background(), in, sqlAnswer("SELECT 1")); !errors.Is(err, grade.ErrBadInstance) {
			t.Errorf("%s: err = %v; want ErrBadInstance", in.TaskID, err)
		}
	}
	// a reference that does not run on the data is not graded
	in := &grade.Instance{TaskID: "ref-fails", Task: grade.TaskDatabase, ReferenceSQL: "SELECT nope FROM t", SchemaSQL: "CREATE TABLE t (a INT);"}
	if res := gradeOK(t, g, in, sqlAnswer("SELECT a FROM t")); res.Status != grade.NotGraded {
		t.Errorf("failing reference: %s (%s); want not graded", res.Status, res.Reason)
	}
}

func TestDatabaseDeterministic(t *testing.T) {
	in := byID(t, grade.TaskDatabase, "sharded-spider-val-982-extra")
	a := gradeOK(t, grade.New(grade.Options{}), in, sqlAnswer("SELECT count(*) FROM Professionals"))
	b := gradeOK(t, grade.New(grade.Options{}), in, sqlAnswer("SELECT count(*) FROM Professionals"))
	if a != b {
		t.Fatalf("two gradings differ:\n%+v\n%+v", a, b)
	}
}

// spiderDB writes a small pets_1 database, the way Spider ships one, into
// dir/pets_1/pets_1.sqlite.
func spiderDB(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "pets_1", "pets_1.sqlite")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	in := byID(t, grade.TaskDatabase, "sharded-spider-val-53-hard")
	stmts := in.SchemaSQL + `;
INSERT INTO Student VALUES (1001,'Smith','Linda',18,'F',600,1121,'BAL'),(1002,'Kim','Tracy',19,'F',600,7712,'HKG'),(1003,'Jones','Shiela',21,'F',600,7792,'WAS'),(1004,'Kumar','Dinesh',20,'M',600,8423,'CHI');
INSERT INTO Pets VALUES (2001,'cat',3,12.0),(2002,'dog',2,13.4),(2003,'dog',1,9.3);
INSERT INTO Has_Pet VALUES (1001,2001),(1002,2002),(1002,2003),(1004,2003);`
	if _, err := db.Exec(stmts); err != nil {
		t.Fatal(err)
	}
	return path
}

func fileHash(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

func TestDatabaseSpiderFiles(t *testing.T) {
	dir := t.TempDir()
	path := spiderDB(t, dir)
	before := fileHash(t, path)
	g := grade.New(grade.Options{DBDir: dir, NoPlugValues: true})
	in := byID(t, grade.TaskDatabase, "sharded-spider-val-53-hard")

	res := gradeOK(t, g, in, sqlAnswer(in.ReferenceSQL))
	if res.Status != grade.Pass || res.Check != "Spider database files: pets_1.sqlite" {
		t.Errorf("reference: %s (%s), check %q", res.Status, res.Reason, res.Check)
	}
	// 2 female students' dogs; "all students" gives 3
	if res := gradeOK(t, g, in, sqlAnswer("SELECT count(*) FROM has_pet JOIN pets ON has_pet.petid = pets.petid WHERE pettype = 'dog'")); res.Status != grade.Fail {
		t.Errorf("wrong query: %s (%s)", res.Status, res.Reason)
	}
	for _, q := range []string{
		"DROP TABLE Student",
		"SELECT 1; DELETE FROM Student",
		"WITH x AS (SELECT 1) DELETE FROM Student",
		"WITH x AS (SELECT 1) UPDATE Student SET Age = 99",
		"WITH x AS (SELECT 1) INSERT INTO Pets VALUES (1, 'fish', 1, 1.0)",
		"ATTACH DATABASE 'other.sqlite' AS o",
		"SELECT * FROM pragma_writable_schema",
	} {
		if res := gradeOK(t, g, in, sqlAnswer(q)); res.Status != grade.Fail {
			t.Errorf("%s: %s (%s); want fail", q, res.Status, res.Reason)
		}
	}
	if fileHash(t, path) != before {
		t.Fatal("grading changed the Spider database file")
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("grading left files beside the database: %v", entries)
	}

	// an instance whose database is not in the folder falls back to
	// generated data and says so
	other := byID(t, grade.TaskDatabase, "sharded-spider-val-701-medium")
	res = gradeOK(t, g, other, sqlAnswer(other.ReferenceSQL))
	if res.Status != grade.Pass || !strings.Contains(res.Check, `no database file for "voter_1"`) {
		t.Errorf("fallback: %s (%s), check %q", res.Status, res.Reason, res.Check)
	}
}

func TestExtractSQL(t *testing.T) {
	tests := []struct {
		name, in, want, how string
	}{
		{"sql fence", "text\n```sql\nSELECT 1\n```", "SELECT 1", grade.ExtractedSQLFence},
		{"last sql fence", "```sql\nSELECT 1\n```\nbetter:\n```SQL\nSELECT 2;\n```", "SELECT 2;", grade.ExtractedSQLFence},
		{"sql fence beats later plain block", "```sql\nSELECT 1\n```\n```\nSELECT 3\n```", "SELECT 1", grade.ExtractedSQLFence},
		{"plain fence with a query", "```\nWITH a AS (SELECT 1) SELECT * FROM a\n```", "WITH a AS (SELECT 1) SELECT * FROM a", grade.ExtractedCodeFence},
		{"bare query", "SELECT name FROM t", "SELECT name FROM t", grade.ExtractedWholeReply},
		{"prose", "Which table do you mean?", "", ""},
		{"unclosed fence", "```sql\nSELECT 5", "SELECT 5", grade.ExtractedSQLFence},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, how := grade.ExtractSQL(tt.in)
			if got != tt.want || how != tt.how {
				t.Errorf("ExtractSQL = %q by %q; want %q by %q", got, how, tt.want, tt.how)
			}
		})
	}
}

func FuzzExtractSQL(f *testing.F) {
	for _, s := range []string{"```sql\nSELECT 1\n```", "~~~sqlite\nselect 'a''b' -- c\n~~~", "```sql", "SELECT \"x", "``` `x` ```"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q, how := grade.ExtractSQL(s)
		if (q == "") != (how == "") {
			t.Fatalf("query %q with rule %q", q, how)
		}
		if q != "" && !strings.Contains(s, q) {
			t.Fatalf("extracted %q is not in the answer", q)
		}
	})
}

func FuzzFencedBlocks(f *testing.F) {
	for _, s := range []string{"```py\nx\n```", "````\n```\n````", "~~~\na\n", "  ```sql \n s \n  ``` ", "```a`b\n```"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, b := range grade.FencedBlocks(s) {
			if !strings.Contains(s, b.Body) {
				t.Fatalf("block body %q is not in the text", b.Body)
			}
			if strings.ContainsAny(b.Lang, " \t\n") {
				t.Fatalf("language %q has spaces", b.Lang)
			}
		}
	})
}
