// Package colour decides whether etdi colours what it prints, and wraps
// etdi's own words (a state, a heading) in ANSI colour codes when it
// does. Colour is for a person at a terminal: never in a pipe or a file
// unless asked for (--color always), never when NO_COLOR is set and the
// choice is left to etdi (--color auto), never on a dumb terminal.
//
// A Painter wraps only text etdi writes itself. Text a server or a file
// supplies is escaped (internal/termtext) and never painted: the only
// escape sequences in etdi's output are the ones a Painter adds.
package colour

import (
	"fmt"
	"strings"
)

// Mode is the --color choice.
type Mode int

const (
	// Auto colours a terminal, unless NO_COLOR is set or TERM is dumb.
	Auto Mode = iota
	// Always colours wherever the output goes.
	Always
	// Never colours.
	Never
)

// Modes are the --color values, in the order help lists them.
const Modes = "auto|always|never"

// ParseMode reads a --color value.
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(s) {
	case "auto", "":
		return Auto, nil
	case "always":
		return Always, nil
	case "never":
		return Never, nil
	}
	return Auto, fmt.Errorf("--color %q: must be one of %s", s, Modes)
}

// Enabled says whether to colour output under mode m, given whether the
// output is a terminal and the environment (lookupEnv is os.LookupEnv or
// a test's). Under Auto, NO_COLOR set to anything but the empty string
// turns colour off (https://no-color.org), and so does TERM=dumb; an
// explicit Always wins over both.
func Enabled(m Mode, terminal bool, lookupEnv func(string) (string, bool)) bool {
	switch m {
	case Always:
		return true
	case Never:
		return false
	}
	if !terminal {
		return false
	}
	if v, ok := lookupEnv("NO_COLOR"); ok && v != "" {
		return false
	}
	if v, _ := lookupEnv("TERM"); v == "dumb" {
		return false
	}
	return true
}

// Painter colours etdi's own words when on; off, it returns them as they
// are. The zero Painter is off.
type Painter struct{ on bool }

// New returns a Painter that colours when on.
func New(on bool) Painter { return Painter{on: on} }

// On reports whether p colours.
func (p Painter) On() bool { return p.on }

const reset = "\x1b[0m"

func (p Painter) paint(code, s string) string {
	if !p.on || s == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + reset
}

// Good is for a state that needs nothing (green).
func (p Painter) Good(s string) string { return p.paint("32", s) }

// Warn is for a state that needs a decision or a warning (yellow).
func (p Painter) Warn(s string) string { return p.paint("33", s) }

// Bad is for a security error or a server not checked (bold red).
func (p Painter) Bad(s string) string { return p.paint("1;31", s) }

// Strong is for a heading (bold).
func (p Painter) Strong(s string) string { return p.paint("1", s) }
