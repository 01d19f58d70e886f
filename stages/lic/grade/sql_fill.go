package grade

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// valueClass is the kind of values a generated column holds, read from its
// declared type the way SQLite derives type affinity, with dates apart.
type valueClass uint8

const (
	classText valueClass = iota
	classInt
	classReal
	classDate
	classBool
)

func classOf(decl string) valueClass {
	d := strings.ToUpper(decl)
	switch {
	case strings.Contains(d, "BOOL"):
		return classBool
	case strings.Contains(d, "INT"):
		return classInt
	case strings.Contains(d, "CHAR"), strings.Contains(d, "CLOB"), strings.Contains(d, "TEXT"):
		return classText
	case strings.Contains(d, "DATE"), strings.Contains(d, "TIME"):
		return classDate
	case strings.Contains(d, "REAL"), strings.Contains(d, "FLOA"), strings.Contains(d, "DOUB"),
		strings.Contains(d, "NUM"), strings.Contains(d, "DEC"):
		return classReal
	}
	return classText // BLOB or no type: Spider keeps text there
}

type colInfo struct {
	name    string
	class   valueClass
	notNull bool
	pk      bool
	group   int
}

type fkInfo struct {
	col       int // index in the child table's columns
	parent    string
	parentCol string // empty: the parent's primary key
}

type tableInfo struct {
	name string
	cols []*colInfo
	fks  []fkInfo
}

// dbSchema is what introspection learned about a database.
type dbSchema struct {
	tables []*tableInfo
	idents map[string]bool // lower-cased table and column names
}

func quoteIdent(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// introspect reads the tables, columns and foreign keys of the database on
// conn.
func introspect(ctx context.Context, conn *sql.Conn) (*dbSchema, error) {
	rows, err := conn.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY rowid`)
	if err != nil {
		return nil, fmt.Errorf("listing tables: %w", err)
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return nil, fmt.Errorf("listing tables: %w", err)
		}
		names = append(names, n)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing tables: %w", err)
	}
	s := &dbSchema{idents: map[string]bool{}}
	for _, n := range names {
		t := &tableInfo{name: n}
		s.idents[strings.ToLower(n)] = true
		if err := readColumns(ctx, conn, t); err != nil {
			return nil, err
		}
		for _, c := range t.cols {
			s.idents[strings.ToLower(c.name)] = true
		}
		if err := readForeignKeys(ctx, conn, t); err != nil {
			return nil, err
		}
		s.tables = append(s.tables, t)
	}
	return s, nil
}

func readColumns(ctx context.Context, conn *sql.Conn, t *tableInfo) error {
	rows, err := conn.QueryContext(ctx, `SELECT name, type, "notnull", pk FROM pragma_table_info(?)`, t.name)
	if err != nil {
		return fmt.Errorf("reading the columns of %s: %w", t.name, err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			c    colInfo
			decl string
			nn   int
			pk   int
		)
		if err := rows.Scan(&c.name, &decl, &nn, &pk); err != nil {
			return fmt.Errorf("reading the columns of %s: %w", t.name, err)
		}
		c.class, c.notNull, c.pk = classOf(decl), nn != 0, pk != 0
		t.cols = append(t.cols, &c)
	}
	return rows.Err()
}

func readForeignKeys(ctx context.Context, conn *sql.Conn, t *tableInfo) error {
	rows, err := conn.QueryContext(ctx, `SELECT "table", "from", "to" FROM pragma_foreign_key_list(?)`, t.name)
	if err != nil {
		return fmt.Errorf("reading the foreign keys of %s: %w", t.name, err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			parent, from string
			to           sql.NullString
		)
		if err := rows.Scan(&parent, &from, &to); err != nil {
			return fmt.Errorf("reading the foreign keys of %s: %w", t.name, err)
		}
		for i, c := range t.cols {
			if strings.EqualFold(c.name, from) {
				t.fks = append(t.fks, fkInfo{col: i, parent: parent, parentCol: to.String})
			}
		}
	}
	return rows.Err()
}

// ddlFromSchemaTables writes CREATE TABLE statements from LiC's
// schema_tables field (Spider's table descriptions: per table its columns
// as [cid, name, type, notnull, default, pk], primary keys and foreign keys
// as [id, seq, parent, from, to, ...]). Every name is quoted, which makes
// it work where schema_sql does not (a column named 18_49_Rating_Share).
func ddlFromSchemaTables(raw []byte) (string, error) {
	var tables map[string]struct {
		Columns     [][]any  `json:"columns"`
		PrimaryKeys []string `json:"primary_keys"`
		ForeignKeys [][]any  `json:"foreign_keys"`
	}
	if err := json.Unmarshal(raw, &tables); err != nil {
		return "", fmt.Errorf("reading schema_tables: %w", err)
	}
	names := make([]string, 0, len(tables))
	for n := range tables {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		t := tables[n]
		var parts []string
		for _, c := range t.Columns {
			if len(c) < 4 {
				return "", fmt.Errorf("reading schema_tables: a column of %s has %d fields, not 6", n, len(c))
			}
			name, _ := c[1].(string)
			decl, _ := c[2].(string)
			if name == "" {
				return "", fmt.Errorf("reading schema_tables: a column of %s has no name", n)
			}
			p := quoteIdent(name)
			if decl != "" {
				p += " " + sanitizeDecl(decl)
			}
			if nn, _ := c[3].(float64); nn != 0 {
				p += " NOT NULL"
			}
			parts = append(parts, p)
		}
		if len(t.PrimaryKeys) > 0 {
			q := make([]string, len(t.PrimaryKeys))
			for i, k := range t.PrimaryKeys {
				q[i] = quoteIdent(k)
			}
			parts = append(parts, "PRIMARY KEY ("+strings.Join(q, ", ")+")")
		}
		for _, fk := range t.ForeignKeys {
			if len(fk) < 5 {
				continue
			}
			parent, _ := fk[2].(string)
			from, _ := fk[3].(string)
			to, _ := fk[4].(string)
			if parent == "" || from == "" {
				continue
			}
			ref := quoteIdent(parent)
			if to != "" {
				ref += "(" + quoteIdent(to) + ")"
			}
			parts = append(parts, "FOREIGN KEY ("+quoteIdent(from)+") REFERENCES "+ref)
		}
		fmt.Fprintf(&b, "CREATE TABLE %s (\n  %s\n);\n", quoteIdent(n), strings.Join(parts, ",\n  "))
	}
	return b.String(), nil
}

var declRE = regexp.MustCompile(`^[A-Za-z]+(?: [A-Za-z]+){0,2}(?: ?\( ?[0-9]+ ?(?:, ?[0-9]+ ?)?\))?$`)

// sanitizeDecl keeps a declared type only when it looks like one ("INT",
// "VARCHAR(50)", "DECIMAL(19,4)", "UNSIGNED BIG INT"); anything else
// becomes the plain type of its class, so that a hostile schema cannot
// smuggle SQL through it.
func sanitizeDecl(d string) string {
	d = strings.TrimSpace(d)
	if declRE.MatchString(d) {
		return d
	}
	switch classOf(d) {
	case classInt:
		return "INTEGER"
	case classReal:
		return "REAL"
	case classDate:
		return "DATETIME"
	case classBool:
		return "BOOLEAN"
	}
	return "TEXT"
}

// filler writes random rows into a generated database.
//
// The point is a test-suite style check: two queries that agree on several
// small random databases are very likely equivalent. Random data alone
// rarely satisfies a WHERE clause, so the values are drawn partly from the
// literals of both queries (tied to the column they are compared with when
// that can be told, with the integers next to numeric literals so that
// < and <= differ), and columns that join (foreign keys, or the same name
// in several tables) draw from one shared pool so that joins find
// partners. Small pools also make duplicates, which is what tells COUNT
// from COUNT(DISTINCT) and GROUP BY mistakes apart.
type filler struct {
	schema   *dbSchema
	literals []sqlLiteral
	groups   int
}

func newFiller(s *dbSchema, lits []sqlLiteral) *filler {
	f := &filler{schema: s, literals: lits}
	// union-find over columns: a foreign key joins child and parent, and
	// columns of one class with the same name join.
	type key struct{ t, c int }
	parent := map[key]key{}
	var find func(k key) key
	find = func(k key) key {
		p, ok := parent[k]
		if !ok || p == k {
			return k
		}
		r := find(p)
		parent[k] = r
		return r
	}
	union := func(a, b key) {
		ra, rb := find(a), find(b)
		if ra != rb {
			if rb.t < ra.t || rb.t == ra.t && rb.c < ra.c {
				ra, rb = rb, ra
			}
			parent[rb] = ra
		}
	}
	index := map[string]int{}
	for ti, t := range s.tables {
		index[strings.ToLower(t.name)] = ti
	}
	byName := map[string]key{}
	for ti, t := range s.tables {
		for ci, c := range t.cols {
			k := key{ti, ci}
			n := strings.ToLower(c.name) + "\x00" + strconv.Itoa(int(c.class))
			if o, ok := byName[n]; ok {
				union(o, k)
			} else {
				byName[n] = k
			}
		}
	}
	for ti, t := range s.tables {
		for _, fk := range t.fks {
			pi, ok := index[strings.ToLower(fk.parent)]
			if !ok {
				continue
			}
			for pci, pc := range s.tables[pi].cols {
				if fk.parentCol == "" && pc.pk || strings.EqualFold(pc.name, fk.parentCol) {
					union(key{ti, fk.col}, key{pi, pci})
					break
				}
			}
		}
	}
	ids := map[key]int{}
	for ti, t := range s.tables {
		for ci, c := range t.cols {
			r := find(key{ti, ci})
			id, ok := ids[r]
			if !ok {
				id = len(ids)
				ids[r] = id
			}
			c.group = id
		}
	}
	f.groups = len(ids)
	return f
}

var (
	genericWords = []string{"Alpha", "bravo", "Charlie", "delta", "Echo", "foxtrot", "Golf", "hotel", "India", "juliet", "Kilo", "lima"}
	genericReals = []float64{0.5, 1.5, 2, 2.25, 3.75, 10, 12.5, 100}
	genericDates = []string{"2001-05-17", "2010-02-28 08:30:00", "2015-11-03 17:45:10", "2018-03-01", "2018-03-01 12:00:00", "2020-07-04 23:59:59", "1999-12-31"}
)

// pools holds, for one filling, the values each column group draws from.
type pools struct {
	generic [][]any // per group
	assoc   [][]any // per group: literals compared with a column of the group
	loose   [5][]any
}

func (f *filler) pools(rng *rand.Rand) *pools {
	p := &pools{generic: make([][]any, f.groups), assoc: make([][]any, f.groups)}
	classOfGroup := make([]valueClass, f.groups)
	namesOfGroup := make([]map[string]bool, f.groups)
	for _, t := range f.schema.tables {
		for _, c := range t.cols {
			classOfGroup[c.group] = c.class
			if namesOfGroup[c.group] == nil {
				namesOfGroup[c.group] = map[string]bool{}
			}
			namesOfGroup[c.group][strings.ToLower(c.name)] = true
		}
	}
	for g := 0; g < f.groups; g++ {
		k := 2 + rng.IntN(5)
		var vals []any
		switch classOfGroup[g] {
		case classInt:
			for i := 1; i <= k; i++ {
				vals = append(vals, int64(i))
			}
		case classBool:
			vals = []any{int64(0), int64(1)}
		case classReal:
			for _, i := range rng.Perm(len(genericReals))[:min(k, len(genericReals))] {
				vals = append(vals, genericReals[i])
			}
		case classDate:
			for _, i := range rng.Perm(len(genericDates))[:min(k, len(genericDates))] {
				vals = append(vals, genericDates[i])
			}
		default:
			for _, i := range rng.Perm(len(genericWords))[:k] {
				vals = append(vals, genericWords[i])
			}
		}
		p.generic[g] = vals
	}
	for _, l := range f.literals {
		vals := literalValues(l)
		if l.column != "" {
			for g := 0; g < f.groups; g++ {
				if namesOfGroup[g][l.column] {
					p.assoc[g] = append(p.assoc[g], vals...)
				}
			}
		}
		if l.str {
			p.loose[classText] = append(p.loose[classText], vals...)
			p.loose[classDate] = append(p.loose[classDate], vals...)
		} else {
			p.loose[classInt] = append(p.loose[classInt], vals...)
			p.loose[classReal] = append(p.loose[classReal], vals...)
		}
	}
	return p
}

// literalValues turns a literal into the values worth storing: a string as
// it is, a LIKE pattern as strings it matches, a number with its
// neighbours.
func literalValues(l sqlLiteral) []any {
	if l.str {
		if l.like && strings.ContainsAny(l.value, "%_") {
			bare := strings.NewReplacer("%", "", "_", "x").Replace(l.value)
			padded := strings.NewReplacer("%", "Zq", "_", "y").Replace(l.value)
			return []any{bare, padded}
		}
		return []any{l.value}
	}
	if n, err := strconv.ParseInt(l.value, 10, 64); err == nil {
		return []any{n, n - 1, n + 1}
	}
	if x, err := strconv.ParseFloat(l.value, 64); err == nil {
		return []any{x, x - 0.5, x + 0.5}
	}
	return nil
}

// fill empties the tables on conn and writes filling number i.
func (f *filler) fill(ctx context.Context, conn *sql.Conn, seed uint64, i int) error {
	rng := rand.New(rand.NewPCG(seed, uint64(i)+0x9e3779b97f4a7c15))
	p := f.pools(rng)
	inserted := map[string][]any{} // "table\x00column" -> values stored
	for _, t := range f.order() {
		if _, err := conn.ExecContext(ctx, "DELETE FROM "+quoteIdent(t.name)); err != nil {
			return fmt.Errorf("emptying %s: %w", t.name, err)
		}
		n := 2 + rng.IntN(3+2*i)
		if n > 16 {
			n = 16
		}
		if i >= 2 && rng.IntN(10) == 0 {
			n = 0
		}
		cols := make([]string, len(t.cols))
		marks := make([]string, len(t.cols))
		for ci, c := range t.cols {
			cols[ci], marks[ci] = quoteIdent(c.name), "?"
		}
		stmt := fmt.Sprintf("INSERT OR IGNORE INTO %s (%s) VALUES (%s)", quoteIdent(t.name), strings.Join(cols, ", "), strings.Join(marks, ", "))
		fkOf := map[int]fkInfo{}
		for _, fk := range t.fks {
			fkOf[fk.col] = fk
		}
		for row := 0; row < n; row++ {
			args := make([]any, len(t.cols))
			for ci, c := range t.cols {
				args[ci] = f.value(rng, p, c, row, i, fkOf, ci, inserted)
			}
			res, err := conn.ExecContext(ctx, stmt, args...)
			if err != nil {
				return fmt.Errorf("filling %s: %w", t.name, err)
			}
			if k, _ := res.RowsAffected(); k > 0 {
				for ci, c := range t.cols {
					key := strings.ToLower(t.name) + "\x00" + strings.ToLower(c.name)
					inserted[key] = append(inserted[key], args[ci])
				}
			}
		}
	}
	return nil
}

func (f *filler) value(rng *rand.Rand, p *pools, c *colInfo, row, filling int, fkOf map[int]fkInfo, ci int, inserted map[string][]any) any {
	if !c.notNull && !c.pk && filling > 0 && rng.IntN(10) == 0 {
		return nil
	}
	if fk, ok := fkOf[ci]; ok && rng.IntN(5) != 0 {
		pc := fk.parentCol
		if pc == "" {
			pc = f.primaryKey(fk.parent)
		}
		if vals := inserted[strings.ToLower(fk.parent)+"\x00"+strings.ToLower(pc)]; len(vals) > 0 {
			return vals[rng.IntN(len(vals))]
		}
	}
	assoc := p.assoc[c.group]
	if c.pk {
		if len(assoc) > 0 && rng.IntN(10) < 3 {
			return assoc[rng.IntN(len(assoc))]
		}
		switch c.class {
		case classInt, classReal, classBool:
			return int64(row + 1 + rng.IntN(2))
		}
		// the pool's own values first, so that same-named columns of other
		// tables join with these rows; numbered copies when rows outrun it.
		g := p.generic[c.group]
		if row < len(g) {
			return g[row]
		}
		return fmt.Sprintf("%v%d", g[row%len(g)], row/len(g)+1)
	}
	if len(assoc) > 0 && rng.IntN(2) == 0 {
		return assoc[rng.IntN(len(assoc))]
	}
	if loose := p.loose[c.class]; len(loose) > 0 && rng.IntN(7) == 0 {
		return loose[rng.IntN(len(loose))]
	}
	g := p.generic[c.group]
	return g[rng.IntN(len(g))]
}

func (f *filler) primaryKey(table string) string {
	for _, t := range f.schema.tables {
		if strings.EqualFold(t.name, table) {
			for _, c := range t.cols {
				if c.pk {
					return c.name
				}
			}
		}
	}
	return ""
}

// order lists tables parents first (by foreign key), so that children can
// draw their keys from rows that exist; cycles keep schema order.
func (f *filler) order() []*tableInfo {
	var (
		out   []*tableInfo
		state = map[string]int{} // 1 visiting, 2 done
		visit func(t *tableInfo)
	)
	byName := map[string]*tableInfo{}
	for _, t := range f.schema.tables {
		byName[strings.ToLower(t.name)] = t
	}
	visit = func(t *tableInfo) {
		k := strings.ToLower(t.name)
		if state[k] != 0 {
			return
		}
		state[k] = 1
		for _, fk := range t.fks {
			if p, ok := byName[strings.ToLower(fk.parent)]; ok {
				visit(p)
			}
		}
		state[k] = 2
		out = append(out, t)
	}
	for _, t := range f.schema.tables {
		visit(t)
	}
	return out
}
