// Reads Parquet files with DuckDB and prints, per file, the column types and
// row count as JSON lines, so Go tests can check that a tool other than
// Arrow Go reads our exports as nested data.
import { DuckDBInstance } from '@duckdb/node-api';
const inst = await DuckDBInstance.create(':memory:');
const con = await inst.connect();
const big = (k, v) => (typeof v === 'bigint' ? Number(v) : v);
for (const f of process.argv.slice(2)) {
  const cols = (await con.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet('${f.replaceAll("'", "''")}')`)).getRowObjects();
  const n = (await con.runAndReadAll(`SELECT count(*) AS n FROM read_parquet('${f.replaceAll("'", "''")}')`)).getRowObjects()[0].n;
  console.log(JSON.stringify({ file: f, rows: n, columns: Object.fromEntries(cols.map(c => [c.column_name, c.column_type])) }, big));
}
