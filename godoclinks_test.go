package etdi

import (
	"fmt"
	"go/ast"
	"go/doc"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// publicPackages are the directories of etdi's importable packages, whose
// doc comments pkg.go.dev renders.
var publicPackages = []string{
	".", "finding", "strictjson", "release", "verify", "pin", "pin/lockfile",
	"guard", "gate", "trust", "policy", "idp", "keys", "keyless",
	"keyless/tuf", "sign", "inband", "registry",
}

const modulePath = "github.com/etdi-dev/etdi"

// loadDoc parses the non-test Go files of dir into its go/doc package.
func loadDoc(t *testing.T, dir string) *doc.Package {
	t.Helper()
	fset := token.NewFileSet()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	importPath := path.Join(modulePath, dir)
	d, err := doc.NewFromFiles(fset, files, importPath)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// docComment is one doc comment of a package: where it belongs and its text.
type docComment struct {
	owner, text string
}

// docComments lists the package comment and the doc comment of every
// exported constant, variable, function, type and method of d.
func docComments(d *doc.Package) []docComment {
	out := []docComment{{"package " + d.Name, d.Doc}}
	values := func(vs []*doc.Value) {
		for _, v := range vs {
			out = append(out, docComment{strings.Join(v.Names, ", "), v.Doc})
		}
	}
	funcs := func(fs []*doc.Func) {
		for _, f := range fs {
			name := f.Name
			if f.Recv != "" {
				name = f.Recv + "." + f.Name
			}
			out = append(out, docComment{name, f.Doc})
		}
	}
	values(d.Consts)
	values(d.Vars)
	funcs(d.Funcs)
	for _, ty := range d.Types {
		out = append(out, docComment{ty.Name, ty.Doc})
		values(ty.Consts)
		values(ty.Vars)
		funcs(ty.Funcs)
		funcs(ty.Methods)
	}
	return out
}

// unresolvedLink matches, in text the doc parser left plain, a bracketed
// Go name it could not link: [Name], [pkg.Name], [*Type.Method].
var unresolvedLink = regexp.MustCompile(`\[\*?(?:[A-Za-z_][A-Za-z0-9_]*/)*[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*){0,2}\]`)

// TestGoDocLinks parses every doc comment of the public packages as go doc
// and pkg.go.dev do and checks their doc links: each bracketed Go name is a
// link (its package is imported or named by full path), and each link to
// one of etdi's packages names an identifier that package declares. A
// renamed or removed identifier fails here until the comments follow it.
func TestGoDocLinks(t *testing.T) {
	docs := map[string]*doc.Package{}
	for _, dir := range publicPackages {
		d := loadDoc(t, dir)
		docs[d.ImportPath] = d
	}
	links := 0
	for _, dir := range publicPackages {
		problems, n := docLinkProblems(docs, docs[path.Join(modulePath, dir)])
		links += n
		for _, p := range problems {
			t.Errorf("%s: %s", dir, p)
		}
	}
	t.Logf("%d doc links", links)
	if links < 200 {
		t.Errorf("only %d doc links found", links)
	}
}

// TestGoDocLinksCatchesStaleNames feeds the check of [TestGoDocLinks] a
// package whose comments name what does not exist (a removed function, a
// removed method, a name of another etdi package that has none such, a
// package it does not import) and names that do exist, and proves the
// first are reported and the second are not.
func TestGoDocLinksCatchesStaleNames(t *testing.T) {
	const src = `// Package fake is a test package.
//
// [Check] and [*Store.Approve], [pin.ErrLocked], [pin.Store.Approve],
// [Options.Name], [os.Getenv], [encoding/json.Marshal]; RFC 8785 [1],
// a range [a-z] and a slice []string are not links.
package fake

import (
	"os"

	"github.com/etdi-dev/etdi/pin"
)

// Options hold a name.
type Options struct{ Name string }

// Store stores.
type Store struct{}

// Approve approves, unlike [Gone] and [Store.Vanished].
func (*Store) Approve() {}

// Check uses [pin.NoSuchName], [pin.Store.NoSuchMethod],
// [pin.Options.NoSuchField], [Options.Missing], [unimported.Name] and
// [github.com/etdi-dev/etdi/internal/nosuch.Name].
func Check() { _ = os.Getenv; _ = pin.ErrLocked }
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "fake.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	d, err := doc.NewFromFiles(fset, []*ast.File{f}, modulePath+"/fake")
	if err != nil {
		t.Fatal(err)
	}
	pinDoc := loadDoc(t, "pin")
	docs := map[string]*doc.Package{pinDoc.ImportPath: pinDoc, d.ImportPath: d}
	problems, links := docLinkProblems(docs, d)
	got := strings.Join(problems, "\n")
	for _, stale := range []string{"[Gone]", "[Store.Vanished]", "pin.NoSuchName", "pin.Store.NoSuchMethod", "pin.Options.NoSuchField", "Options.Missing", "[unimported.Name]", "internal/nosuch.Name"} {
		if !strings.Contains(got, stale) {
			t.Errorf("%s is not reported; reported:\n%s", stale, got)
		}
	}
	if len(problems) != 8 {
		t.Errorf("%d problems reported, want 8:\n%s", len(problems), got)
	}
	// Check, *Store.Approve, pin.ErrLocked, pin.Store.Approve,
	// Options.Name, os.Getenv, encoding/json.Marshal, and the four links
	// to etdi names that do not exist; a name of the package itself that
	// it does not declare is plain text, not a link.
	if links != 11 {
		t.Errorf("%d links, want 11", links)
	}
}

// docLinkProblems checks the doc links of d's comments against the
// packages of docs, and returns what is wrong and how many links there
// are.
func docLinkProblems(docs map[string]*doc.Package, d *doc.Package) (problems []string, links int) {
	p := d.Parser()
	for _, c := range docComments(d) {
		if c.text == "" {
			continue
		}
		walkText(p.Parse(c.text), func(tx comment.Text) {
			switch tx := tx.(type) {
			case comment.Plain:
				for _, m := range unresolvedLink.FindAllString(string(tx), -1) {
					problems = append(problems, fmt.Sprintf("doc comment of %s: %s is not a doc link (unknown name, or its package is not imported)", c.owner, m))
				}
			case *comment.DocLink:
				links++
				if !linkResolves(docs, d, tx) {
					problems = append(problems, fmt.Sprintf("doc comment of %s: link [%s] names nothing its package declares", c.owner, linkName(tx)))
				}
			}
		})
	}
	return problems, links
}

// walkText calls f for every piece of text in the parsed comment.
func walkText(d *comment.Doc, f func(comment.Text)) {
	var texts func([]comment.Text)
	texts = func(ts []comment.Text) {
		for _, tx := range ts {
			f(tx)
			switch tx := tx.(type) {
			case *comment.Italic:
				texts([]comment.Text{comment.Plain(*tx)})
			case *comment.Link:
				texts(tx.Text)
			case *comment.DocLink:
				texts(tx.Text)
			}
		}
	}
	for _, b := range d.Content {
		switch b := b.(type) {
		case *comment.Paragraph:
			texts(b.Text)
		case *comment.Heading:
			texts(b.Text)
		case *comment.List:
			for _, it := range b.Items {
				for _, ib := range it.Content {
					if p, ok := ib.(*comment.Paragraph); ok {
						texts(p.Text)
					}
				}
			}
		}
	}
}

// linkResolves reports whether a doc link of package from names a
// declared identifier. Links into packages outside etdi (the standard
// library, dependencies) are left to the doc parser, which resolved their
// package name.
func linkResolves(docs map[string]*doc.Package, from *doc.Package, l *comment.DocLink) bool {
	target := from
	if l.ImportPath != "" {
		t, ok := docs[l.ImportPath]
		if !ok {
			return !strings.HasPrefix(l.ImportPath, modulePath)
		}
		target = t
	}
	if l.Name == "" {
		return l.ImportPath != ""
	}
	return declares(target, l.Recv, l.Name)
}

// declares reports whether d declares the exported identifier name (or
// the method or field recv.name).
func declares(d *doc.Package, recv, name string) bool {
	values := func(vs []*doc.Value) bool {
		for _, v := range vs {
			for _, n := range v.Names {
				if n == name {
					return true
				}
			}
		}
		return false
	}
	funcs := func(fs []*doc.Func) bool {
		for _, f := range fs {
			if f.Name == name {
				return true
			}
		}
		return false
	}
	if recv == "" {
		if values(d.Consts) || values(d.Vars) || funcs(d.Funcs) {
			return true
		}
		for _, ty := range d.Types {
			if ty.Name == name || values(ty.Consts) || values(ty.Vars) || funcs(ty.Funcs) {
				return true
			}
		}
		return false
	}
	for _, ty := range d.Types {
		if ty.Name != recv {
			continue
		}
		if funcs(ty.Methods) {
			return true
		}
		// [Type.Name] also names a field of a struct type or a method
		// of an interface type.
		for _, spec := range ty.Decl.Specs {
			ts, ok := spec.(*ast.TypeSpec)
			if !ok {
				continue
			}
			var fields *ast.FieldList
			switch tt := ts.Type.(type) {
			case *ast.StructType:
				fields = tt.Fields
			case *ast.InterfaceType:
				fields = tt.Methods
			}
			if fields == nil {
				continue
			}
			for _, f := range fields.List {
				for _, n := range f.Names {
					if n.Name == name {
						return true
					}
				}
			}
		}
	}
	return false
}

// linkName returns a doc link as it was written.
func linkName(l *comment.DocLink) string {
	s := l.Name
	if l.Recv != "" {
		s = l.Recv + "." + s
	}
	if l.ImportPath != "" {
		s = l.ImportPath + "." + s
	}
	return s
}
