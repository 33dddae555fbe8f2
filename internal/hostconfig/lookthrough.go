package hostconfig

import (
	"fmt"
	"path/filepath"
	"strings"
)

// IsEtdiRun reports whether command and args run `etdi run`: the program
// is named etdi (etdi.exe) and its first argument is "run".
func IsEtdiRun(command string, args []string) bool {
	base := strings.ToLower(filepath.Base(strings.ReplaceAll(command, `\`, "/")))
	return (base == "etdi" || base == "etdi.exe") && len(args) > 0 && args[0] == "run"
}

// alreadyWrapped is the status of an entry that already runs etdi run
// (args are its arguments): already wrapped, unless a bundle is asked for
// that the entry does not carry, which wrap does not add to an existing
// entry: leaving it would say the server is checked with the bundle when
// it is not.
func alreadyWrapped(args []string, bundle string) ([]Edit, string, string) {
	if bundle == "" {
		return nil, StatusAlreadyWrapped, ""
	}
	have := ""
	for i := 1; i < len(args) && args[i] != "--"; i++ {
		if v, ok := strings.CutPrefix(args[i], "--bundle="); ok {
			have = v
		} else if args[i] == "--bundle" && i+1 < len(args) {
			have = args[i+1]
		}
	}
	if have == bundle {
		return nil, StatusAlreadyWrapped, ""
	}
	return nil, StatusRefused, "already wrapped without this bundle; etdi unwrap it first, then wrap it with --bundle"
}

// lookThrough turns an entry that runs `etdi run` into the server behind
// it: `etdi run [flags] -- CMD ARGS...` becomes CMD ARGS, and
// `etdi run [flags] --url URL` becomes URL with each --header-env
// "Name=VAR" header taken from the entry's env VAR (which then leaves the
// env, as the server never sees it) or, failing that, from the
// environment. Arguments etdi cannot read become a problem: the entry is
// never checked as something other than what the host starts.
func (e *Entry) lookThrough(lookup func(string) (string, bool)) {
	if !IsEtdiRun(e.Command, e.Args) {
		return
	}
	e.Wrapped = true
	args := e.Args[1:]
	var url string
	var rest []string
	dash := false
	headers := map[string]string{}
	env := map[string]string{}
	for k, v := range e.Env {
		env[k] = v
	}
	fail := func(format string, a ...any) {
		e.Problems = append(e.Problems, "runs etdi run: "+fmt.Sprintf(format, a...))
		e.Command, e.Args, e.URL = "", nil, ""
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			rest, dash = args[i+1:], true
			break
		}
		flag, val, hasVal := strings.Cut(a, "=")
		switch flag {
		case "--trust", "--pins", "--name", "--url", "--header-env", "--header", "--bundle", "--timeout", "--lock-timeout", "--by":
		case "--audit-calls":
			if hasVal && val != "true" && val != "false" {
				fail("argument %q is not one etdi understands", a)
				return
			}
			continue // a switch: it takes no value
		default:
			fail("argument %q is not one etdi understands", a)
			return
		}
		if !hasVal {
			if i+1 >= len(args) {
				fail("%s needs a value", flag)
				return
			}
			i++
			val = args[i]
		}
		switch flag {
		case "--bundle":
			e.Bundle = val
		case "--url":
			url = val
		case "--header":
			name, v, ok := strings.Cut(val, ":")
			if !ok {
				fail("--header wants \"Name: value\"")
				return
			}
			headers[strings.TrimSpace(name)] = strings.TrimSpace(v)
		case "--header-env":
			name, variable, ok := strings.Cut(val, "=")
			if !ok || name == "" || variable == "" {
				fail("--header-env %q: want Name=VARIABLE", val)
				return
			}
			if v, ok := env[variable]; ok {
				headers[name] = v
				delete(env, variable)
			} else if v, ok := lookupOrNil(lookup, variable); ok && v != "" {
				headers[name] = v
			} else {
				e.Problems = append(e.Problems, fmt.Sprintf("header %s comes from environment variable %s, which is not set", name, variable))
			}
		}
	}
	switch {
	case dash && url != "":
		fail("gives both a command and --url")
	case dash && len(rest) == 0:
		fail("nothing after --")
	case dash:
		e.Command, e.Args = rest[0], rest[1:]
		if len(e.Args) == 0 {
			e.Args = nil
		}
	case url != "":
		e.Command, e.Args, e.URL = "", nil, url
		if len(headers) > 0 {
			e.Headers = headers
		}
		if e.Env != nil {
			e.setEnv(env)
		}
	default:
		fail("neither -- CMD nor --url")
	}
}

func lookupOrNil(lookup func(string) (string, bool), name string) (string, bool) {
	if lookup == nil {
		return "", false
	}
	return lookup(name)
}
