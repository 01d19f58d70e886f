// Runs SQL queries with DuckDB and prints, per query, one JSON line: the
// query and its rows (objects keyed by column name; BIGINT and other
// values JSON cannot hold exactly come as strings), or the error. Go tests
// use it to unnest the list columns of our Parquet exports with a reader
// other than Arrow Go. Usage: node query.mjs SQL...
import { DuckDBInstance } from '@duckdb/node-api';
const inst = await DuckDBInstance.create(':memory:');
const con = await inst.connect();
let failed = false;
for (const sql of process.argv.slice(2)) {
  try {
    const rows = (await con.runAndReadAll(sql)).getRowObjectsJson();
    console.log(JSON.stringify({ sql, rows }));
  } catch (e) {
    failed = true;
    console.log(JSON.stringify({ sql, error: String(e.message ?? e) }));
  }
}
process.exit(failed ? 1 : 0);
