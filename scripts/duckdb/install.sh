#!/usr/bin/env bash
# Installs DuckDB's Node bindings (from npm) into a folder, with the scripts
# that read (read.mjs) and query (query.mjs) Parquet files with them, and
# prints the folder, for the test that reads our Parquet exports with
# DuckDB. Usage: install.sh DIR
set -euo pipefail
dir=${1:?folder}
mkdir -p "$dir"
cp "$(dirname "$0")/read.mjs" "$(dirname "$0")/query.mjs" "$dir/"
cd "$dir"
[ -f package.json ] || echo '{"private":true,"type":"module"}' > package.json
npm install --no-audit --no-fund --silent @duckdb/node-api@1.5.6-r.1 >/dev/null
echo "$dir"
