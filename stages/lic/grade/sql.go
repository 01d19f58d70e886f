package grade

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	_ "github.com/mattn/go-sqlite3" // registers the sqlite3 driver
)

// How a SQL answer was found.
const (
	ExtractedSQLFence   = "last ```sql block"
	ExtractedCodeFence  = "last code block holding a query"
	ExtractedWholeReply = "whole reply"
)

// maxQueryBytes bounds the SQL text graded; longer is refused as a query.
const maxQueryBytes = 64 << 10

// maxPlugCandidates is how many value-plugged variants of a prediction
// are tried, LiC's own cap.
const maxPlugCandidates = 100

// ExtractSQL finds the query in a database reply: the last ```sql (or
// ```sqlite) block; failing that, the last fenced block of another or no
// language whose text starts like a query; failing that, the whole reply
// when it starts like a query. It returns "" when none applies.
func ExtractSQL(answer string) (query, how string) {
	blocks := FencedBlocks(answer)
	for i := len(blocks) - 1; i >= 0; i-- {
		if l := blocks[i].Lang; l == "sql" || l == "sqlite" || l == "sqlite3" || l == "postgresql" || l == "mysql" {
			if strings.TrimSpace(blocks[i].Body) != "" {
				return strings.TrimSpace(blocks[i].Body), ExtractedSQLFence
			}
		}
	}
	for i := len(blocks) - 1; i >= 0; i-- {
		if looksLikeQuery(blocks[i].Body) {
			return strings.TrimSpace(blocks[i].Body), ExtractedCodeFence
		}
	}
	if len(blocks) == 0 && looksLikeQuery(answer) {
		return strings.TrimSpace(answer), ExtractedWholeReply
	}
	return "", ""
}

func looksLikeQuery(s string) bool {
	sig := significant(tokenizeSQL(s))
	for len(sig) > 0 && sig[0].kind == tkOp && sig[0].text == "(" {
		sig = sig[1:]
	}
	return len(sig) > 1 && (isKeyword(sig[0], "select") || isKeyword(sig[0], "with"))
}

// dbEnv is one database both queries run on.
type dbEnv struct {
	name string
	db   *sql.DB
	conn *sql.Conn
}

func (e *dbEnv) close() {
	if e.conn != nil {
		e.conn.Close()
	}
	if e.db != nil {
		e.db.Close()
	}
}

func (g *Grader) gradeDatabase(ctx context.Context, in *Instance, answer string) (Result, error) {
	if strings.TrimSpace(in.ReferenceSQL) == "" {
		return Result{}, badInstance(in, "the database instance has no reference_sql")
	}
	r := Result{Task: TaskDatabase, Expected: in.ReferenceSQL}
	text, how := ExtractSQL(answer)
	if text == "" {
		r.Status, r.Reason = Fail, "no SQL query found in the answer"
		return r, nil
	}
	r.Artifact, r.Extraction = text, how
	if len(text) > maxQueryBytes {
		r.Status, r.Reason = Fail, fmt.Sprintf("the query is longer than %d bytes", maxQueryBytes)
		return r, nil
	}
	ref, why := prepareQuery(in.ReferenceSQL, g.opts.KeepDistinct)
	if why != "" {
		return Result{}, badInstance(in, "the reference SQL cannot be run: %s", why)
	}
	pred, why := prepareQuery(text, g.opts.KeepDistinct)
	if why != "" {
		r.Status, r.Reason = Fail, why
		return r, nil
	}

	set, err := g.databases(ctx, in, ref, pred)
	defer set.close()
	var rf *refFailure
	if errors.As(err, &rf) {
		r.Status, r.Reason = NotGraded, rf.Error()
		return r, nil
	}
	if err != nil {
		return Result{}, err
	}
	envs, schema, refRes := set.envs, set.schema, set.ref
	r.Check = set.check
	if len(envs) > 1 {
		r.Check += fmt.Sprintf("; the reference gives a non-empty, non-zero result on %d of %d", informativeCount(refRes), len(envs))
	}
	ordered := hasOrderBy(ref)
	if ordered {
		r.Check += "; row order compared (ORDER BY)"
	}

	ok, reason, slow, err := matchAll(ctx, envs, refRes, pred, ordered, g.opts)
	if err != nil {
		return Result{}, err
	}
	if ok {
		r.Status, r.Reason = Pass, "same result as the reference"+onAll(len(envs))
		return r, nil
	}
	// Plugged variants are not tried after a time-out: other values rarely
	// make a query fast, and 100 more slow runs would stall the worker.
	if !g.opts.NoPlugValues && !slow {
		for _, cand := range plugCandidates(pred, ref, schema.idents, maxPlugCandidates) {
			ok, _, slow, err := matchAll(ctx, envs, refRes, cand, ordered, g.opts)
			if err != nil {
				return Result{}, err
			}
			if slow {
				break
			}
			if ok {
				r.Status = Pass
				r.Reason = "same result as the reference" + onAll(len(envs)) + " once the reference's values are plugged in (LiC's value plugging): " + cand
				return r, nil
			}
		}
	}
	r.Status, r.Reason = Fail, reason
	return r, nil
}

func onAll(n int) string {
	if n == 1 {
		return ""
	}
	return fmt.Sprintf(" on all %d databases", n)
}

// matchAll runs q on every database and compares with the reference's
// results. A query that fails is a mismatch whose reason carries the
// error (slow says it ran out of time); only the caller's context ending
// is an error.
func matchAll(ctx context.Context, envs []*dbEnv, refRes []resultSet, q string, ordered bool, o Options) (ok bool, reason string, slow bool, err error) {
	for i, e := range envs {
		res, err := runQuery(ctx, e.conn, q, o)
		if err != nil {
			if ctx.Err() != nil {
				return false, "", false, ctx.Err()
			}
			return false, "the query fails: " + err.Error(), errors.Is(err, errQueryTimeout), nil
		}
		if ok, why := sameResult(refRes[i], res, ordered); !ok {
			where := ""
			if len(envs) > 1 {
				where = " on " + e.name
			}
			return false, "the result differs from the reference's" + where + ": " + why, false, nil
		}
	}
	return true, "", false, nil
}

var (
	errTooManyRows  = errors.New("the result has too many rows")
	errQueryTimeout = errors.New("time limit exceeded")
)

// runQuery runs q with the per-query time limit and row cap.
func runQuery(ctx context.Context, conn *sql.Conn, q string, o Options) (resultSet, error) {
	qctx, cancel := context.WithTimeout(ctx, o.QueryTimeout)
	defer cancel()
	rows, err := conn.QueryContext(qctx, q)
	if err != nil {
		return resultSet{}, queryErr(qctx, err, o)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return resultSet{}, err
	}
	rs := resultSet{cols: len(cols)}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if len(rs.rows) >= o.MaxRows {
			return resultSet{}, fmt.Errorf("%w (more than %d)", errTooManyRows, o.MaxRows)
		}
		if err := rows.Scan(ptrs...); err != nil {
			return resultSet{}, err
		}
		row := make([]string, len(cols))
		for i, v := range vals {
			row[i] = cellKey(v)
		}
		rs.rows = append(rs.rows, row)
	}
	if err := rows.Err(); err != nil {
		return resultSet{}, queryErr(qctx, err, o)
	}
	return rs, nil
}

func queryErr(qctx context.Context, err error, o Options) error {
	if errors.Is(qctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%w (%s)", errQueryTimeout, o.QueryTimeout)
	}
	return err
}

// dbSet is the databases one grading compares on, with the reference
// query's result on each.
type dbSet struct {
	envs   []*dbEnv
	schema *dbSchema
	ref    []resultSet
	check  string // which databases, for the Result
}

func (s *dbSet) close() {
	if s == nil {
		return
	}
	for _, e := range s.envs {
		e.close()
	}
}

// refFailure is the reference query failing on a database: the instance
// is then not graded (by its reference nothing can be right).
type refFailure struct {
	db  string
	err error
}

func (e *refFailure) Error() string {
	return fmt.Sprintf("the reference query fails on %s: %v", e.db, e.err)
}

// runReference runs the reference on e; a failure is a *refFailure unless
// the context ended.
func runReference(ctx context.Context, e *dbEnv, ref string, o Options) (resultSet, error) {
	res, err := runQuery(ctx, e.conn, ref, o)
	if err != nil {
		if ctx.Err() != nil {
			return resultSet{}, ctx.Err()
		}
		return resultSet{}, &refFailure{db: e.name, err: err}
	}
	return res, nil
}

// informative reports whether a result can tell queries apart at all: it
// has a row with a value other than NULL, 0 or the empty string. An empty
// result, COUNT(*) = 0 or MAX() = NULL is matched by too many wrong
// queries.
func informative(rs resultSet) bool {
	for _, r := range rs.rows {
		for _, c := range r {
			if c != "n" && c != "i0" && c != "s" {
				return true
			}
		}
	}
	return false
}

func informativeCount(rss []resultSet) int {
	n := 0
	for _, rs := range rss {
		if informative(rs) {
			n++
		}
	}
	return n
}

// databases opens the databases to compare on (Spider's files of the
// instance when DBDir has them, generated fillings otherwise) and runs
// the reference on each. The returned set is non-nil whenever
// databases were opened, even with an error, so the caller can close it.
func (g *Grader) databases(ctx context.Context, in *Instance, ref, pred string) (*dbSet, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	note := ""
	if g.opts.DBDir != "" {
		files, err := spiderFiles(g.opts.DBDir, in.DBID)
		if err != nil {
			return nil, err
		}
		if len(files) > 0 {
			return g.spiderDatabases(ctx, files, ref)
		}
		note = fmt.Sprintf(" (no database file for %q under the database folder)", in.DBID)
	}
	return g.generatedDatabases(ctx, in, ref, pred, note)
}

func (g *Grader) spiderDatabases(ctx context.Context, files []string, ref string) (*dbSet, error) {
	set := &dbSet{}
	names := make([]string, len(files))
	for i, f := range files {
		e, err := openReadOnly(ctx, f)
		if err != nil {
			return set, err
		}
		set.envs = append(set.envs, e)
		names[i] = filepath.Base(f)
	}
	schema, err := introspect(ctx, set.envs[0].conn)
	if err != nil {
		return set, fmt.Errorf("reading the schema of %s: %w", set.envs[0].name, err)
	}
	set.schema = schema
	for _, e := range set.envs {
		if err := setReadOnly(e.conn, true); err != nil {
			return set, err
		}
		res, err := runReference(ctx, e, ref, g.opts)
		if err != nil {
			return set, err
		}
		set.ref = append(set.ref, res)
	}
	set.check = "Spider database files: " + strings.Join(names, ", ")
	return set, nil
}

// fillAttempts is how many random fillings are tried for each generated
// database kept.
const fillAttempts = 4

// generatedDatabases builds Options.Fillings databases from the
// instance's schema. Like Spider's test suites, it prefers databases on
// which the reference gives an informative result: each database is
// filled up to fillAttempts times until it does, and at most a quarter of
// the databases kept may be uninformative (an empty result still tests
// something, but a suite of them passes almost any query).
func (g *Grader) generatedDatabases(ctx context.Context, in *Instance, ref, pred, note string) (*dbSet, error) {
	ddl, from, err := g.schemaDDL(ctx, in)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	set := &dbSet{}
	for i := 0; i < g.opts.Fillings; i++ {
		e, err := openMemory(ctx, fmt.Sprintf("generated database %d", i+1))
		if err != nil {
			return set, err
		}
		set.envs = append(set.envs, e)
		if _, err := e.conn.ExecContext(ctx, ddl); err != nil {
			return set, fmt.Errorf("creating the schema of %s: %w", in.TaskID, err)
		}
		if set.schema == nil {
			if set.schema, err = introspect(ctx, e.conn); err != nil {
				return set, fmt.Errorf("reading the schema of %s: %w", in.TaskID, err)
			}
		}
	}
	lits := append(queryLiterals(ref, set.schema.idents), queryLiterals(pred, set.schema.idents)...)
	f := newFiller(set.schema, lits)
	dull := 0
	for i, e := range set.envs {
		var res resultSet
		for k := 0; k < fillAttempts; k++ {
			if k > 0 {
				if err := setReadOnly(e.conn, false); err != nil {
					return set, err
				}
			}
			if err := f.fill(ctx, e.conn, g.opts.Seed, i+k*g.opts.Fillings); err != nil {
				return set, fmt.Errorf("filling %s for %s: %w", e.name, in.TaskID, err)
			}
			if err := setReadOnly(e.conn, true); err != nil {
				return set, err
			}
			if res, err = runReference(ctx, e, ref, g.opts); err != nil {
				return set, err
			}
			if informative(res) {
				break
			}
			if k == fillAttempts-1 || (dull+1)*4 <= len(set.envs) {
				dull++
				break
			}
		}
		set.ref = append(set.ref, res)
	}
	set.check = fmt.Sprintf("generated databases: %d random fillings of the schema from %s (seed %d)%s", len(set.envs), from, g.opts.Seed, note)
	return set, nil
}

// schemaDDL returns statements that create the instance's tables: its
// schema_sql when that runs in SQLite, else CREATE TABLEs written from its
// schema_tables. from names the source used.
func (g *Grader) schemaDDL(ctx context.Context, in *Instance) (ddl, from string, err error) {
	var sqlErr error
	if strings.TrimSpace(in.SchemaSQL) != "" {
		sqlErr = tryDDL(ctx, in.SchemaSQL)
		if sqlErr == nil {
			return in.SchemaSQL, "schema_sql", nil
		}
	}
	if len(in.SchemaTables) > 0 {
		ddl, err := ddlFromSchemaTables(in.SchemaTables)
		if err == nil {
			err = tryDDL(ctx, ddl)
		}
		if err == nil {
			if sqlErr != nil {
				return ddl, "schema_tables (schema_sql does not run: " + sqlErr.Error() + ")", nil
			}
			return ddl, "schema_tables", nil
		}
		if sqlErr == nil {
			sqlErr = err
		}
	}
	if sqlErr == nil {
		return "", "", badInstance(in, "the database instance has neither schema_sql nor schema_tables, and no database file")
	}
	return "", "", badInstance(in, "building the database schema: %v", sqlErr)
}

// tryDDL runs ddl on a scratch in-memory database and reports whether it
// creates at least one table without error.
func tryDDL(ctx context.Context, ddl string) error {
	e, err := openMemory(ctx, "scratch")
	if err != nil {
		return err
	}
	defer e.close()
	if _, err := e.conn.ExecContext(ctx, ddl); err != nil {
		return err
	}
	var n int
	if err := e.conn.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table'`).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return errors.New("it creates no table")
	}
	return nil
}

// spiderFiles lists the *.sqlite files of database id under dir, sorted.
func spiderFiles(dir, id string) ([]string, error) {
	if id == "" || id != filepath.Base(id) || strings.HasPrefix(id, ".") {
		return nil, nil
	}
	entries, err := os.ReadDir(filepath.Join(dir, id))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing the Spider database files of %s: %w", id, err)
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".sqlite") {
			out = append(out, filepath.Join(dir, id, e.Name()))
		}
	}
	sort.Strings(out)
	return out, nil
}

func openMemory(ctx context.Context, name string) (*dbEnv, error) {
	// A private in-memory database lives as long as its one connection.
	return openConn(ctx, ":memory:", name, name)
}

// openReadOnly opens a Spider database file so that nothing can write to
// it: read-only and immutable at the file level and query_only at the
// connection level. The caller adds the read-only authorizer once it has
// read the schema (the authorizer refuses the PRAGMAs that reading needs).
func openReadOnly(ctx context.Context, path string) (*dbEnv, error) {
	esc := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	return openConn(ctx, "file:"+esc+"?mode=ro&immutable=1&_query_only=1", path, filepath.Base(path))
}

// openConn opens dsn on a single connection under limitConn's limits, as
// every database of the grader is opened; what names it in errors and
// name in the dbEnv.
func openConn(ctx context.Context, dsn, what, name string) (*dbEnv, error) {
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", what, err)
	}
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("opening %s: %w", what, err)
	}
	e := &dbEnv{name: name, db: db, conn: conn}
	if err := limitConn(conn); err != nil {
		e.close()
		return nil, err
	}
	return e, nil
}

// SQLite's authorizer action and result codes and the length limit's id,
// from its C API (stable across versions). They are spelled out here so
// that the package does not depend on the driver exporting them.
const (
	sqliteOK          = 0
	sqliteDeny        = 1
	sqliteRead        = 20
	sqliteSelect      = 21
	sqliteFunction    = 31
	sqliteRecursive   = 33
	sqliteLimitLength = 0
)

// readOnlyAuthorizer lets statements read tables and call functions, and
// nothing else: no writes, schema changes, ATTACH, PRAGMA or
// transactions. It also refuses load_extension.
func readOnlyAuthorizer(op int, arg1, arg2, _ string) int {
	switch op {
	case sqliteSelect, sqliteRead, sqliteRecursive:
		return sqliteOK
	case sqliteFunction:
		if strings.EqualFold(arg2, "load_extension") {
			return sqliteDeny
		}
		return sqliteOK
	}
	return sqliteDeny
}

// setReadOnly turns the read-only authorizer on or off.
func setReadOnly(conn *sql.Conn, on bool) error {
	return conn.Raw(func(dc any) error {
		c, ok := dc.(interface {
			RegisterAuthorizer(func(int, string, string, string) int)
		})
		if !ok {
			return fmt.Errorf("restricting a database connection: the driver connection %T has no authorizer", dc)
		}
		if on {
			c.RegisterAuthorizer(readOnlyAuthorizer)
		} else {
			c.RegisterAuthorizer(nil)
		}
		return nil
	})
}

// limitConn bounds the size of any string or blob a query can build, so
// that a query like SELECT zeroblob(1e9) fails instead of using memory.
func limitConn(conn *sql.Conn) error {
	return conn.Raw(func(dc any) error {
		c, ok := dc.(interface{ SetLimit(id, value int) int })
		if !ok {
			return fmt.Errorf("limiting a database connection: the driver connection %T has no limits", dc)
		}
		c.SetLimit(sqliteLimitLength, 16<<20)
		return nil
	})
}
