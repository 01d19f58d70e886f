package grade

import "strings"

// Block is one fenced code block of a Markdown answer.
type Block struct {
	// Lang is the first word of the info string, lower-cased ("sql",
	// "python"); empty when the fence has none.
	Lang string
	// Body is the text between the fences, without them.
	Body string
	// Closed is false when the answer ended inside the block (a reply cut
	// off by a token limit); Body then runs to the end of the answer.
	Closed bool
}

// FencedBlocks returns the fenced code blocks of text in order.
//
// It follows Markdown's rules loosely, as model replies need: a fence is a
// line whose first non-space characters are three or more backticks or
// tildes; the block ends at a line holding only a fence of the same
// character at least as long. Indentation before a fence is allowed at any
// depth (models indent fences inside list items). A backtick fence whose
// info string contains a backtick is not a fence, as in CommonMark.
func FencedBlocks(text string) []Block {
	var (
		out   []Block
		open  bool
		char  byte
		width int
		cur   Block
		body  strings.Builder
	)
	for len(text) > 0 {
		line := text
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i+1], text[i+1:]
		} else {
			text = ""
		}
		trim := strings.TrimLeft(line, " \t")
		trim = strings.TrimRight(trim, "\r\n")
		if !open {
			c, n, info, ok := fenceOpen(trim)
			if !ok {
				continue
			}
			open, char, width = true, c, n
			cur = Block{Lang: langOf(info)}
			body.Reset()
			continue
		}
		if fenceClose(trim, char, width) {
			cur.Body = strings.TrimSuffix(strings.TrimSuffix(body.String(), "\n"), "\r")
			cur.Closed = true
			out = append(out, cur)
			open = false
			continue
		}
		body.WriteString(line)
	}
	if open {
		cur.Body = strings.TrimRight(body.String(), "\r\n")
		out = append(out, cur)
	}
	return out
}

// fenceOpen reports whether line (left-trimmed) opens a fence.
func fenceOpen(line string) (char byte, width int, info string, ok bool) {
	if len(line) < 3 || (line[0] != '`' && line[0] != '~') {
		return 0, 0, "", false
	}
	char = line[0]
	for width < len(line) && line[width] == char {
		width++
	}
	if width < 3 {
		return 0, 0, "", false
	}
	info = strings.TrimSpace(line[width:])
	if char == '`' && strings.IndexByte(info, '`') >= 0 {
		return 0, 0, "", false
	}
	return char, width, info, true
}

func fenceClose(line string, char byte, width int) bool {
	line = strings.TrimRight(line, " \t")
	if len(line) < width {
		return false
	}
	for i := 0; i < len(line); i++ {
		if line[i] != char {
			return false
		}
	}
	return true
}

func langOf(info string) string {
	if f := strings.Fields(info); len(f) > 0 {
		l := strings.ToLower(f[0])
		// "{.python}" and "python{" style attributes.
		l = strings.Trim(l, "{}.")
		return l
	}
	return ""
}
