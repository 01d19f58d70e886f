// Package detect opens an input file and picks its reader: it undoes
// compression, then sniffs the content (magic bytes for Parquet and Arrow;
// for text, whether it is a JSON array or JSON Lines and which keys the first
// records have), using the file extension only as a hint. The readers
// themselves live in the format packages; the columnar ones are passed in as
// functions so this package does not depend on Arrow.
package detect
