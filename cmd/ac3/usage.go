package main

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ac3/ac3/pipeline/spell"
)

// A command line ac3 cannot read gets one line: what is wrong, the nearest
// flag or command it knows when a name looks misspelt, and the help to
// read. The framework's own answer is its error followed by the whole help
// text (100 lines for ac3 run), which pushes the error off the screen.

// withUsageErrors sets the one-line usage errors on cmds and their
// subcommands, and the action that names an unknown subcommand on the
// commands that only group others.
func withUsageErrors(cmds []*cli.Command) {
	for _, c := range cmds {
		if c.OnUsageError == nil {
			c.OnUsageError = usageError
		}
		requireOneLine(c)
		if len(c.Subcommands) > 0 && c.Action == nil {
			c.Action = groupAction
		}
		withUsageErrors(c.Subcommands)
	}
}

// requiredMark ends the usage of a required flag, which the help shows.
const requiredMark = " (required)"

// requireOneLine makes a missing required flag of c a one-line error too:
// the framework checks required flags itself and prints the whole help
// before its error. The flags stay marked required in the help text; c's
// Before hook does the check instead.
func requireOneLine(c *cli.Command) {
	var required []string
	for _, f := range c.Flags {
		if sf, ok := f.(*cli.StringFlag); ok && sf.Required {
			sf.Required = false
			sf.Usage += requiredMark
			required = append(required, sf.Name)
		}
	}
	if len(required) == 0 {
		return
	}
	before := c.Before
	c.Before = func(ctx *cli.Context) error {
		var missing []string
		for _, name := range required {
			if !ctx.IsSet(name) {
				missing = append(missing, dashed(name))
			}
		}
		if len(missing) > 0 {
			verb := "is"
			if len(missing) > 1 {
				verb = "are"
			}
			return fmt.Errorf("%s %s required; see '%s --help'", strings.Join(missing, " and "), verb, commandPath(ctx))
		}
		if before != nil {
			return before(ctx)
		}
		return nil
	}
}

// usageError is the OnUsageError of ac3 and of every command.
func usageError(c *cli.Context, err error, _ bool) error {
	path := commandPath(c)
	see := fmt.Sprintf("see '%s --help'", path)
	name, unknown := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	if !unknown {
		return fmt.Errorf("%s; %s", longFlags(err.Error()), see)
	}
	for _, x := range c.Lineage()[1:] {
		if x.Command != nil && definesFlag(x.Command.VisibleFlags(), name) {
			// A flag of ac3 itself given after the command (--memory-limit).
			owner := commandPath(x)
			rest := strings.TrimPrefix(path, owner+" ")
			return fmt.Errorf("%s is a flag of %s: give it before %s (%s %s … %s); %s",
				dashed(name), owner, rest, owner, dashed(name), rest, see)
		}
	}
	for _, sub := range c.Command.VisibleCommands() {
		if definesFlag(sub.VisibleFlags(), name) {
			// A command's flag given before the command (ac3 --config x run).
			return fmt.Errorf("%s is a flag of commands, not of %s: give it after the command (%s COMMAND %s …); %s",
				dashed(name), path, path, dashed(name), see)
		}
	}
	var names []string
	for _, f := range c.Command.VisibleFlags() {
		names = append(names, f.Names()...)
	}
	if s := spell.Nearest(name, names); s != "" {
		return fmt.Errorf("unknown flag %s: did you mean %s? %s", dashed(name), dashed(s), see)
	}
	return fmt.Errorf("unknown flag %s for %s; %s", dashed(name), path, see)
}

// groupAction is the action of ac3 and of the commands that group
// subcommands (ac3 llm, ac3 batch): without an argument it shows the help;
// an argument that names no command is an error with the nearest one.
func groupAction(c *cli.Context) error {
	root := len(c.Lineage()) <= 2 // ac3's context and the one it runs in
	if !c.Args().Present() {
		if root {
			return cli.ShowAppHelp(c)
		}
		return cli.ShowSubcommandHelp(c)
	}
	name := c.Args().First()
	if root && (name == "help" || name == "h") {
		// 'ac3 help [COMMAND]': the root has no help command of its own
		// (HideHelpCommand keeps it out of the command list).
		topic := c.Args().Get(1)
		if topic == "" {
			return cli.ShowAppHelp(c)
		}
		if c.Command.Command(topic) != nil {
			return cli.ShowCommandHelp(c, topic)
		}
		name = topic
	}
	path := commandPath(c)
	var names []string
	for _, sub := range c.Command.VisibleCommands() {
		names = append(names, sub.Names()...)
	}
	if s := spell.Nearest(name, names); s != "" {
		return fmt.Errorf("unknown command %q: did you mean %s? see '%s --help'", name, s, path)
	}
	return fmt.Errorf("unknown command %q for %s; see '%s --help'", name, path, path)
}

// commandPath is the command line that reaches c's command: "ac3 llm ping".
func commandPath(c *cli.Context) string {
	var names []string
	for _, x := range c.Lineage() {
		if x.Command != nil && x.Command.Name != "" {
			names = append(names, x.Command.Name)
		}
	}
	slices.Reverse(names)
	return strings.Join(names, " ")
}

// definesFlag reports whether one of flags has the name.
func definesFlag(flags []cli.Flag, name string) bool {
	for _, f := range flags {
		if slices.Contains(f.Names(), name) {
			return true
		}
	}
	return false
}

// dashed writes a flag's name as it is typed: -c, --config.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// singleDash is a long flag name as Go's flag package prints it in its
// errors ("invalid value "x" for flag -budget-usd").
var singleDash = regexp.MustCompile(`(^|[ :])-([A-Za-z0-9][A-Za-z0-9-]+)`)

// longFlags rewrites the flag names in a parser error as they are typed.
func longFlags(msg string) string { return singleDash.ReplaceAllString(msg, "$1--$2") }
