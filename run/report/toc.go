package report

import (
	"bufio"
	"html"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// tocMark is where WriteHTML puts the table of contents once every
// heading is written.
const tocMark = "<!--toc-->\n"

// slugs gives headings the anchors GitHub gives them (lower case, spaces
// to hyphens, punctuation dropped, -1, -2 ... on repeats), so report.md's
// contents work where it is usually read and report.html uses the same
// names.
type slugs map[string]int

func (s slugs) of(title string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	id := b.String()
	if id == "" {
		id = "section"
	}
	n := s[id]
	s[id] = n + 1
	if n > 0 {
		id += "-" + strconv.Itoa(n)
	}
	return id
}

var headingRE = regexp.MustCompile(`<h([23])>(.*?)</h[23]>`)

// withTOC gives every h2 and h3 of page an id and puts, at tocMark, a
// list of links to them: the sections, with their subsections under them.
func withTOC(page string) string {
	ids := slugs{}
	var toc strings.Builder
	toc.WriteString(`<nav class="toc"><b>Contents</b><ol>`)
	item, inSub := false, false // an h2's entry is open; its list of h3s is
	body := headingRE.ReplaceAllStringFunc(page, func(h string) string {
		m := headingRE.FindStringSubmatch(h)
		level, inner := m[1], m[2]
		id := ids.of(html.UnescapeString(inner))
		link := `<a href="#` + id + `">` + inner + `</a>`
		if level == "2" {
			if inSub {
				toc.WriteString("</li></ol>")
				inSub = false
			}
			if item {
				toc.WriteString("</li>")
			}
			toc.WriteString("<li>" + link)
			item = true
		} else {
			if !item {
				toc.WriteString("<li>")
				item = true
			}
			if inSub {
				toc.WriteString("</li><li>" + link)
			} else {
				toc.WriteString("<ol><li>" + link)
				inSub = true
			}
		}
		return `<h` + level + ` id="` + id + `">` + inner + `</h` + level + `>`
	})
	if inSub {
		toc.WriteString("</li></ol>")
	}
	if item {
		toc.WriteString("</li>")
	}
	toc.WriteString("</ol></nav>\n")
	return strings.Replace(body, tocMark, toc.String(), 1)
}

// mdWithTOC puts a list of links to the "## " and "### " headings of md
// before its first "## " heading.
func mdWithTOC(md string) string {
	ids := slugs{}
	var toc strings.Builder
	sc := bufio.NewScanner(strings.NewReader(md))
	sc.Buffer(nil, len(md)+1)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			t := strings.TrimPrefix(line, "## ")
			toc.WriteString("- [" + mdLinkText(t) + "](#" + ids.of(t) + ")\n")
		case strings.HasPrefix(line, "### "):
			t := strings.TrimPrefix(line, "### ")
			toc.WriteString("  - [" + mdLinkText(t) + "](#" + ids.of(t) + ")\n")
		}
	}
	if toc.Len() == 0 {
		return md
	}
	i := strings.Index(md, "\n## ")
	if i < 0 {
		return md
	}
	return md[:i+1] + "**Contents**\n\n" + toc.String() + "\n" + md[i+1:]
}

// mdLinkText keeps brackets in a heading from ending the link text.
func mdLinkText(s string) string {
	return strings.NewReplacer("[", `\[`, "]", `\]`).Replace(s)
}
