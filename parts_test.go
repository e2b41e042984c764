package workerpool_test

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// The shape of the package's insides, counted from the source as the API's
// budget is (api_test.go): the pool is a facade, the dispatcher's parts see
// only their own state, and files stay short enough to read. See the file
// comment of dispatch.go.

// The facade's budget: WorkerPool's fields (padding included) and its
// methods, exported and not.
const (
	maxPoolFields  = 20
	maxPoolMethods = 40
)

// parts are the dispatcher's parts, and the types other goroutines see of
// the pool (workerSide, signals, observer): none may hold or take the pool
// or the dispatcher.
var parts = []string{
	"admission", "barriers", "crew", "flows", "retryInbox", "sizing", "slots", "timers", "tokens", "waitQueue",
	"workerSide", "signals", "observer", "autoSizer",
}

// The longest a file may be, in lines; doc.go, the package's contract, has
// no limit, and dispatch.go, the loop, a tighter one.
const (
	maxFileLines     = 600
	maxDispatchLines = 550
)

func TestThePoolIsAFacade(t *testing.T) {
	src := parseSource(t)
	fields := src.fields["WorkerPool"]
	methods := src.methods["WorkerPool"]
	if len(fields) > maxPoolFields {
		t.Errorf("WorkerPool has %d fields, more than %d: %v", len(fields), maxPoolFields, fields)
	}
	if len(methods) > maxPoolMethods {
		t.Errorf("WorkerPool has %d methods, more than %d: %v", len(methods), maxPoolMethods, methods)
	}
	t.Logf("WorkerPool: %d fields, %d methods", len(fields), len(methods))
}

func TestPartsSeeNeitherThePoolNorTheDispatcher(t *testing.T) {
	src := parseSource(t)
	for _, part := range parts {
		spec, ok := src.types[part]
		if !ok {
			t.Errorf("part %s: no such type", part)
			continue
		}
		if st, ok := spec.Type.(*ast.StructType); ok {
			for _, field := range st.Fields.List {
				for _, name := range typeNames(field.Type) {
					if name == "WorkerPool" || name == "dispatcher" {
						t.Errorf("part %s holds a %s", part, name)
					}
				}
			}
		}
		for _, fn := range src.funcs[part] {
			for _, param := range fn.Type.Params.List {
				for _, name := range typeNames(param.Type) {
					if name == "WorkerPool" || name == "dispatcher" {
						t.Errorf("method %s.%s takes a %s", part, fn.Name.Name, name)
					}
				}
			}
		}
	}
}

func TestFilesStayShort(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") || name == "doc.go" {
			continue
		}
		text, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		limit := maxFileLines
		if name == "dispatch.go" {
			limit = maxDispatchLines
		}
		if n := bytes.Count(text, []byte("\n")); n > limit {
			t.Errorf("%s has %d lines, more than %d", name, n, limit)
		}
	}
}

// source is the package's non-test declarations, by type: the type specs,
// their fields' names, and their methods.
type source struct {
	types   map[string]*ast.TypeSpec
	fields  map[string][]string
	methods map[string][]string
	funcs   map[string][]*ast.FuncDecl
}

func parseSource(t *testing.T) source {
	t.Helper()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	src := source{types: map[string]*ast.TypeSpec{}, fields: map[string][]string{}, methods: map[string][]string{}, funcs: map[string][]*ast.FuncDecl{}}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, e.Name(), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				for _, s := range d.Specs {
					if s, ok := s.(*ast.TypeSpec); ok {
						src.types[s.Name.Name] = s
						if st, ok := s.Type.(*ast.StructType); ok {
							for _, field := range st.Fields.List {
								for _, n := range field.Names {
									src.fields[s.Name.Name] = append(src.fields[s.Name.Name], n.Name)
								}
								if len(field.Names) == 0 { // embedded
									src.fields[s.Name.Name] = append(src.fields[s.Name.Name], docTypeName(field.Type))
								}
							}
						}
					}
				}
			case *ast.FuncDecl:
				if d.Recv != nil {
					recv := docTypeName(d.Recv.List[0].Type)
					src.methods[recv] = append(src.methods[recv], d.Name.Name)
					src.funcs[recv] = append(src.funcs[recv], d)
				}
			}
		}
	}
	return src
}

// typeNames lists every type name that n mentions.
func typeNames(n ast.Node) []string {
	var names []string
	ast.Inspect(n, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			names = append(names, id.Name)
		}
		return true
	})
	return names
}
