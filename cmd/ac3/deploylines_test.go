package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"
	"gopkg.in/yaml.v3"
)

// The helpers here read the ac3 command lines out of deploy/ (Kubernetes
// manifests and shell scripts) and check each against the CLI's own
// commands and flags, so a manifest cannot drift from the binary it runs.

// deployLine is one ac3 command line found in a deploy file.
type deployLine struct {
	file string
	argv []string // argv[0] is "ac3"
}

func (l deployLine) String() string { return l.file + ": " + strings.Join(l.argv, " ") }

// shellCommands splits a shell script into simple commands, each as its
// words after quote removal. A parameter expansion ($x, ${x}, ${x:-d},
// ${x[@]}, ${x%.*}) becomes vars[x], or "x" when vars has no entry; a
// command or arithmetic substitution becomes "x". It knows only what the
// deploy scripts use: quotes, backslashes, comments, line continuations and
// ; & | as command separators.
func shellCommands(script string, vars map[string]string) [][]string {
	var (
		cmds    [][]string
		words   []string
		word    strings.Builder
		started bool // a word is open, even if empty ("")
	)
	endWord := func() {
		if started {
			words = append(words, word.String())
		}
		word.Reset()
		started = false
	}
	endCmd := func() {
		endWord()
		if len(words) > 0 {
			cmds = append(cmds, words)
		}
		words = nil
	}
	s := []rune(script)
	for i := 0; i < len(s); i++ {
		switch r := s[i]; {
		case r == '\\' && i+1 < len(s):
			i++
			if s[i] != '\n' { // backslash-newline joins lines
				word.WriteRune(s[i])
				started = true
			}
		case r == '#' && !started:
			for i+1 < len(s) && s[i+1] != '\n' {
				i++
			}
		case r == '\n' || r == ';' || r == '&' || r == '|':
			endCmd()
		case r == ' ' || r == '\t' || r == '\r':
			endWord()
		case r == '\'':
			started = true
			for i++; i < len(s) && s[i] != '\''; i++ {
				word.WriteRune(s[i])
			}
		case r == '"':
			started = true
			i = doubleQuoted(s, i+1, &word, vars)
		case r == '$':
			started = true
			var v string
			v, i = expansion(s, i, vars)
			word.WriteString(v)
		default:
			word.WriteRune(r)
			started = true
		}
	}
	endCmd()
	return cmds
}

// doubleQuoted copies the inside of a double-quoted string starting at s[i]
// into w and returns the index of its closing quote.
func doubleQuoted(s []rune, i int, w *strings.Builder, vars map[string]string) int {
	for ; i < len(s) && s[i] != '"'; i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s) && strings.ContainsRune("$`\"\\\n", s[i+1]):
			i++
			if s[i] != '\n' {
				w.WriteRune(s[i])
			}
		case s[i] == '$':
			var v string
			v, i = expansion(s, i, vars)
			w.WriteString(v)
		default:
			w.WriteRune(s[i])
		}
	}
	return i
}

// expansion reads the expansion starting with the $ at s[i] and returns its
// value and the index of its last character.
func expansion(s []rune, i int, vars map[string]string) (string, int) {
	value := func(name string) string {
		if v, ok := vars[name]; ok {
			return v
		}
		return "x"
	}
	if i+1 >= len(s) {
		return "$", i
	}
	switch s[i+1] {
	case '{':
		end := closing(s, i+1, '{', '}')
		return value(leadingName(s[i+2 : max(end, i+2)])), end
	case '(':
		return "x", closing(s, i+1, '(', ')')
	}
	name := leadingName(s[i+1:])
	if name == "" {
		return "$", i // a lone $ is itself
	}
	return value(name), i + len([]rune(name))
}

// closing returns the index of the close that matches the open at s[i], or
// the last index when there is none.
func closing(s []rune, i int, open, close rune) int {
	depth := 0
	for ; i < len(s); i++ {
		switch s[i] {
		case open:
			depth++
		case close:
			if depth--; depth == 0 {
				return i
			}
		}
	}
	return len(s) - 1
}

// leadingName is the variable name at the start of s.
func leadingName(s []rune) string {
	n := 0
	for n < len(s) && (s[n] == '_' || s[n] >= 'a' && s[n] <= 'z' || s[n] >= 'A' && s[n] <= 'Z' || s[n] >= '0' && s[n] <= '9') {
		n++
	}
	return string(s[:n])
}

// ac3Commands keeps the commands of cmds that run ac3 (after an exec).
func ac3Commands(file string, cmds [][]string) []deployLine {
	var out []deployLine
	for _, w := range cmds {
		for len(w) > 0 && (w[0] == "exec" || w[0] == "then" || w[0] == "do" || w[0] == "else") {
			w = w[1:]
		}
		if len(w) > 0 && filepath.Base(w[0]) == "ac3" {
			out = append(out, deployLine{file: file, argv: append([]string{"ac3"}, w[1:]...)})
		}
	}
	return out
}

// manifestLines finds the ac3 command lines of the containers in a
// multi-document Kubernetes manifest: a container's command and args, or
// the commands of a script run with sh -c / bash -c. A container with no
// command runs its image's entrypoint, which for an ac3 image is ac3.
func manifestLines(file string, data []byte, vars map[string]string) ([]deployLine, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out []deployLine
	for {
		var doc any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", file, err)
		}
		for _, c := range containers(doc) {
			argv := append(strs(c["command"]), strs(c["args"])...)
			image, _ := c["image"].(string)
			if len(strs(c["command"])) == 0 && strings.Contains(image, "ac3") {
				argv = append([]string{"ac3"}, argv...)
			}
			out = append(out, containerLines(file, argv, vars)...)
		}
	}
}

// containerLines is the ac3 command lines of one container's argv.
func containerLines(file string, argv []string, vars map[string]string) []deployLine {
	if len(argv) == 0 {
		return nil
	}
	switch filepath.Base(argv[0]) {
	case "ac3":
		return []deployLine{{file: file, argv: append([]string{"ac3"}, argv[1:]...)}}
	case "sh", "bash":
		for i := 1; i+1 < len(argv); i++ {
			if strings.HasPrefix(argv[i], "-") && strings.Contains(argv[i], "c") {
				return ac3Commands(file, shellCommands(argv[i+1], vars))
			}
		}
	}
	return nil
}

// containers walks a decoded YAML document for every container and init
// container, wherever the kind puts its pod spec.
func containers(v any) []map[string]any {
	var out []map[string]any
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if k == "containers" || k == "initContainers" {
				for _, c := range asList(x) {
					if m, ok := c.(map[string]any); ok {
						out = append(out, m)
					}
				}
				continue
			}
			out = append(out, containers(x)...)
		}
	case []any:
		for _, x := range v {
			out = append(out, containers(x)...)
		}
	}
	return out
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// strs is a YAML list of scalars as strings (numbers as written).
func strs(v any) []string {
	var out []string
	for _, x := range asList(v) {
		out = append(out, fmt.Sprint(x))
	}
	return out
}

// checkLine says why ac3 would refuse argv, or nil: the command path must
// exist and end at a command that runs, every flag must be defined on it,
// every required flag must be given on the line (not from the
// environment), and no flag may follow a positional argument (the parser
// would take it for an argument). The line goes through the real app with
// every action replaced by one that only records what it was given.
func checkLine(argv []string) error {
	e := &env{stop: make(chan struct{}), stdout: io.Discard, stderr: io.Discard, getenv: func(string) string { return "" }}
	app := newApp(e)
	cmd, rest, err := resolveCommand(app.Commands, argv[1:])
	if err != nil {
		return err
	}
	for _, f := range cmd.Flags {
		if isRequired(f) && !hasFlag(rest, f.Names()) {
			return fmt.Errorf("%s: required flag --%s missing", cmd.Name, f.Names()[0])
		}
	}
	var args []string
	called := false
	noOps(app.Commands, func(c *cli.Context) error {
		called = true
		args = c.Args().Slice()
		return nil
	})
	app.Before, app.After = nil, nil
	if err := app.Run(append([]string{"ac3"}, argv[1:]...)); err != nil {
		return fmt.Errorf("%s: %w", cmd.Name, err)
	}
	if !called {
		return fmt.Errorf("%s: the command did not run (help shown instead?)", cmd.Name)
	}
	for _, a := range args {
		if strings.HasPrefix(a, "-") && a != "-" {
			return fmt.Errorf("%s: %q comes after a positional argument, so it is not read as a flag", cmd.Name, a)
		}
	}
	return nil
}

// resolveCommand follows the leading words of args down the command tree
// and returns the command they name and the arguments after it.
func resolveCommand(cmds []*cli.Command, args []string) (*cli.Command, []string, error) {
	var cmd *cli.Command
	for len(args) > 0 && len(cmds) > 0 && !strings.HasPrefix(args[0], "-") {
		next := findCommand(cmds, args[0])
		if next == nil {
			break
		}
		cmd, cmds, args = next, next.Subcommands, args[1:]
	}
	switch {
	case cmd == nil && len(args) > 0:
		return nil, nil, fmt.Errorf("no command %q", args[0])
	case cmd == nil:
		return nil, nil, fmt.Errorf("no command given")
	case len(cmd.Subcommands) > 0 && cmd.Action == nil:
		return nil, nil, fmt.Errorf("%s: needs a subcommand", cmd.Name)
	}
	return cmd, args, nil
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

// hasFlag reports whether args give one of the names as a flag.
func hasFlag(args, names []string) bool {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			continue
		}
		a = strings.TrimLeft(a, "-")
		a, _, _ = strings.Cut(a, "=")
		for _, n := range names {
			if a == n {
				return true
			}
		}
	}
	return false
}

// noOps replaces the action, and the hooks around it, of every command
// below cmds.
func noOps(cmds []*cli.Command, action cli.ActionFunc) {
	for _, c := range cmds {
		if c.Action != nil || len(c.Subcommands) == 0 {
			c.Action = action
		}
		c.Before, c.After = nil, nil
		noOps(c.Subcommands, action)
	}
}

// isRequired reports whether f is a flag requireOneLine made its command
// check for.
func isRequired(f cli.Flag) bool {
	sf, ok := f.(*cli.StringFlag)
	return ok && strings.HasSuffix(sf.Usage, requiredMark)
}
