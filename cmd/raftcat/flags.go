package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
)

// Every command parses its flags through parseFlags, so that they all
// behave alike: --help (-h) prints the command's usage and flags on
// stdout and exits 0; a bad flag prints one line on stderr, naming the
// flag as it is spelled (--name) and pointing at --help, and exits 2.

// usageFunc writes a command's whole help: what it does and its flags.
type usageFunc func(w io.Writer, fs *flag.FlagSet)

// usageText is the help made of text followed by the flags.
func usageText(text string) usageFunc {
	return func(w io.Writer, fs *flag.FlagSet) {
		fmt.Fprint(w, text)
		printFlags(w, fs)
	}
}

// parseFlags parses args into fs. ok is false when the command ends
// here, with code its exit status.
func parseFlags(fs *flag.FlagSet, args []string, stdout, stderr io.Writer, usage usageFunc) (code int, ok bool) {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	switch {
	case err == nil:
		return 0, true
	case errors.Is(err, flag.ErrHelp):
		usage(stdout, fs)
		return 0, false
	}
	return badUsage(fs, stderr, "%s", explained(fs, dashed(err.Error()))), false
}

// parseError is the flag package's word for a number or a duration it
// could not read.
var parseError = regexp.MustCompile(`^invalid value (".*") for flag --([^:]+): parse error$`)

// explained says what a flag whose value could not be read wants.
func explained(fs *flag.FlagSet, msg string) string {
	m := parseError.FindStringSubmatch(msg)
	if m == nil || fs.Lookup(m[2]) == nil {
		return msg
	}
	kind, _ := flag.UnquoteUsage(fs.Lookup(m[2]))
	want := map[string]string{"duration": "a duration such as 30s or 5m", "int": "a whole number", "uint": "a whole number of 0 or more",
		"float": "a number", "value": "a value"}[kind]
	if want == "" {
		want = "a " + kind
	}
	return fmt.Sprintf("invalid value %s for --%s: want %s", m[1], m[2], want)
}

// badUsage reports a command line fs cannot run as one line, with where
// to find help, and returns exit status 2.
func badUsage(fs *flag.FlagSet, stderr io.Writer, format string, args ...any) int {
	fmt.Fprintf(stderr, "%s: %s (see '%s --help')\n", fs.Name(), fmt.Sprintf(format, args...), fs.Name())
	return 2
}

// wantArgs checks the count of positional arguments left after the
// flags: n exactly, or with n < 0 at most -n.
func wantArgs(fs *flag.FlagSet, n int, what string, stderr io.Writer) (code int, ok bool) {
	got := fs.NArg()
	switch {
	case n >= 0 && got < n:
		return badUsage(fs, stderr, "missing %s", what), false
	case n >= 0 && got > n, n < 0 && got > -n:
		return badUsage(fs, stderr, "unexpected argument %q", fs.Arg(max(n, -n))), false
	}
	return 0, true
}

// singleDash finds a flag named with one dash in the flag package's
// errors ("flag provided but not defined: -x", "invalid value "v" for
// flag -x: ...", "flag needs an argument: -x").
var singleDash = regexp.MustCompile(`(: |flag |for )-([A-Za-z0-9])`)

// dashed spells flags in a flag package error as the docs do: --name.
func dashed(msg string) string { return singleDash.ReplaceAllString(msg, "$1--$2") }

// printFlags lists the flags of fs as flag.PrintDefaults does, spelled
// --name.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if name != "" {
			line += " " + name
		}
		line += "\n    \t" + strings.ReplaceAll(usage, "\n", "\n    \t")
		if showDefault(f) {
			if strings.HasSuffix(fmt.Sprintf("%T", f.Value), ".stringValue") {
				line += fmt.Sprintf(" (default %q)", f.DefValue)
			} else {
				line += fmt.Sprintf(" (default %s)", f.DefValue)
			}
		}
		fmt.Fprintln(w, line)
	})
}

// showDefault says whether a flag's default is worth printing: not a
// zero value, nor one its text already states.
func showDefault(f *flag.Flag) bool {
	switch f.DefValue {
	case "", "0", "0s", "false", "[]":
		return false
	}
	return !strings.Contains(f.Usage, "(default")
}

// unknownCommand reports a command (or subcommand) raftcat does not have
// in one line, with where to find the list, and returns exit status 2.
func unknownCommand(stderr io.Writer, parent, cmd string) int {
	fmt.Fprintf(stderr, "%s: unknown command %q (see '%s --help')\n", parent, cmd, parent)
	return 2
}

// helpAsked reports whether args ask for help anywhere: a dispatcher that
// finds no command in them prints its list of commands instead.
func helpAsked(args []string) bool { return slices.ContainsFunc(args, isHelpFlag) }
