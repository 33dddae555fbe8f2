package strictjson

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// FieldError reports an invalid or missing field. Path names the place,
// e.g. "tools[2].permissions[0].scope".
type FieldError struct {
	Path string
	Msg  string
}

func (e *FieldError) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

// Field is a possibly absent JSON value at a path. Its methods extract
// typed values strictly and name the path in every error; every etdi
// format is read through them.
type Field struct {
	Path string
	V    *Value // nil if absent
}

// Root returns the [Field] of a whole document.
func Root(v *Value) Field { return Field{"", v} }

// Errorf returns a [*FieldError] at f's path.
func (f Field) Errorf(format string, args ...any) error {
	return &FieldError{f.Path, fmt.Sprintf(format, args...)}
}

// Want checks that f is present and of kind k.
func (f Field) Want(k Kind) error {
	if f.V == nil {
		return f.Errorf("required field is missing")
	}
	if f.V.Kind != k {
		return f.Errorf("must be %s %s, not %s %s", article(k), k, article(f.V.Kind), f.V.Kind)
	}
	return nil
}

func article(k Kind) string {
	if k == Array || k == Object {
		return "an"
	}
	return "a"
}

// Object returns f as an object.
func (f Field) Object() (ObjectField, error) {
	if err := f.Want(Object); err != nil {
		return ObjectField{}, err
	}
	return ObjectField(f), nil
}

// Array returns f as an array.
func (f Field) Array() (ArrayField, error) {
	if err := f.Want(Array); err != nil {
		return ArrayField{}, err
	}
	return ArrayField(f), nil
}

// Str returns f as a string.
func (f Field) Str() (string, error) {
	if err := f.Want(String); err != nil {
		return "", err
	}
	return f.V.Str, nil
}

// OptStr returns f as a string, or "" if f is absent.
func (f Field) OptStr() (string, error) {
	if f.V == nil {
		return "", nil
	}
	return f.Str()
}

// Uint returns f as a non-negative integer.
func (f Field) Uint() (uint64, error) {
	if err := f.Want(Number); err != nil {
		return 0, err
	}
	n := f.V.Num
	if n < 0 || n != math.Trunc(n) {
		return 0, f.Errorf("must be a non-negative integer")
	}
	return uint64(n), nil
}

// Time returns f as an RFC 3339 timestamp.
func (f Field) Time() (time.Time, error) {
	s, err := f.Str()
	if err != nil {
		return time.Time{}, err
	}
	t, err := ParseTime(s)
	if err != nil {
		return time.Time{}, f.Errorf("%q is not an RFC 3339 time", truncate(s, 64))
	}
	return t, nil
}

// ParseTime parses an RFC 3339 date-time in the one form SPEC.md §2
// allows: YYYY-MM-DDThh:mm:ss, an optional "." and fraction digits, then
// "Z" or ±hh:mm, with an upper-case T and Z. Go's time.Parse alone also
// takes a one-digit hour, a comma before the fraction and an offset of
// 24 hours, so the form is checked first: a timestamp has one spelling.
func ParseTime(s string) (time.Time, error) {
	if !timeForm(s) {
		return time.Time{}, errTimeForm
	}
	return time.Parse(time.RFC3339, s)
}

var errTimeForm = errors.New("not YYYY-MM-DDThh:mm:ss[.fraction](Z|±hh:mm)")

// timeForm reports whether s has the form ParseTime takes; time.Parse
// checks the ranges of the fields.
func timeForm(s string) bool {
	const date = "dddd-dd-ddTdd:dd:dd"
	if len(s) < len(date)+1 {
		return false
	}
	for i := 0; i < len(date); i++ {
		if date[i] == 'd' && !isDigit(s[i]) || date[i] != 'd' && s[i] != date[i] {
			return false
		}
	}
	rest := s[len(date):]
	if rest[0] == '.' {
		n := 1
		for n < len(rest) && isDigit(rest[n]) {
			n++
		}
		if n == 1 {
			return false
		}
		rest = rest[n:]
	}
	if rest == "Z" {
		return true
	}
	return len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && isDigit(rest[1]) && isDigit(rest[2]) && rest[3] == ':' &&
		isDigit(rest[4]) && isDigit(rest[5]) && (rest[1] < '2' || rest[1] == '2' && rest[2] <= '3') && rest[4] <= '5'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// OptTime returns f as an RFC 3339 timestamp, or the zero time if absent.
func (f Field) OptTime() (time.Time, error) {
	if f.V == nil {
		return time.Time{}, nil
	}
	return f.Time()
}

// ObjectField is a [Field] known to hold an object.
type ObjectField Field

// Field returns the member named name (exact, case-sensitive match).
func (o ObjectField) Field(name string) Field {
	p := name
	if o.Path != "" {
		p = o.Path + "." + name
	}
	return Field{p, o.V.Get(name)}
}

// Only rejects members other than the given names.
func (o ObjectField) Only(names ...string) error {
	for _, m := range o.V.Members {
		ok := false
		for _, n := range names {
			if m.Name == n {
				ok = true
				break
			}
		}
		if !ok {
			return Field(o).Errorf("unknown field %q (allowed: %s)", truncate(m.Name, 64), strings.Join(names, ", "))
		}
	}
	return nil
}

// ArrayField is a [Field] known to hold an array.
type ArrayField Field

// Len returns the number of elements.
func (a ArrayField) Len() int { return len(a.V.Elems) }

// Elem returns element i.
func (a ArrayField) Elem(i int) Field {
	return Field{a.Path + "[" + strconv.Itoa(i) + "]", a.V.Elems[i]}
}

// Errorf returns a [*FieldError] at a's path.
func (a ArrayField) Errorf(format string, args ...any) error { return Field(a).Errorf(format, args...) }
