package workerpool_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// maxExportedNames is the budget of the root package's API: exported
// top-level names (funcs, types, consts, vars) plus the exported methods of
// exported types, counted from the source. A name added past it must take
// one away (see CHANGELOG.md's v0.2.0 migration table for how the API was
// cut to it).
const maxExportedNames = 60

func TestExportedNamesStayWithinTheBudget(t *testing.T) {
	names := exportedNames(t, ".")
	if len(names) > maxExportedNames {
		t.Errorf("the package exports %d names, more than its budget of %d:\n%s", len(names), maxExportedNames, strings.Join(names, "\n"))
	}
	t.Logf("%d exported names", len(names))
}

// exportedNames lists the exported names of the package in dir, as
// maxExportedNames counts them.
func exportedNames(t *testing.T, dir string) []string {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	types := map[string]bool{}
	var names []string
	type method struct{ recv, name string }
	var methods []method
	for _, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							types[s.Name.Name] = true
							names = append(names, s.Name.Name)
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								names = append(names, n.Name)
							}
						}
					}
				}
			case *ast.FuncDecl:
				switch {
				case !d.Name.IsExported():
				case d.Recv == nil:
					names = append(names, d.Name.Name)
				default:
					methods = append(methods, method{docTypeName(d.Recv.List[0].Type), d.Name.Name})
				}
			}
		}
	}
	for _, m := range methods {
		if types[m.recv] {
			names = append(names, m.recv+"."+m.name)
		}
	}
	sort.Strings(names)
	return names
}
