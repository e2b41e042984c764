package workerpool_test

// This file keeps the package's documentation from listing the same things
// in many places and then letting the lists drift apart. doc.go (the package
// comment) holds one reference table per kind of thing; the docs of calls,
// types and fields link to those tables instead of repeating them. The test
// reads the package's source (every non-test .go file of this directory)
// with go/parser, so it does not depend on the package's API compiling in
// any particular way.
//
// The sets, computed from the code (never from a list in this file):
//
//	header      set                  members
//	Call        calls with options   exported funcs, and exported methods of exported types
//	                                 ("Type.Method"), whose last parameter is ...TaskOption
//	Option      pool options         exported funcs whose result type is Option
//	Error       errors               exported package-level vars whose name starts with Err
//	TaskOption  TaskOption fields    the exported fields of struct type TaskOption
//
// A set with no member (no such type, or no exported field) does not exist.
// The fields of TaskOption, the options of a task, need no table in doc.go:
// the struct lists them, each with its doc; a list of them elsewhere is
// checked as any other.
//
// The tables. In the package comment of doc.go, a reference table is a
// preformatted (indented, not a list) block whose first line is a header row
// whose first cell (its first run of non-space text) is exactly one of the
// headers above. Cells are separated by two or more spaces (or a tab). Each
// following row's first cell names one member: as in the set ("WorkerPool.Go",
// "WithName", "Busy"), or a method or field by its name alone ("Go",
// "Status.Busy" or "Busy"), with or without what follows it: the name is the
// identifier path before any "(" or "[" ("WithMaxWaiting(n, overflow)",
// "Call[T]"; a leading "[", "`" or "*" is skipped). A row whose first cell is empty (it starts with a space)
// continues the row above, and blank lines are skipped. Each existing set
// must have exactly one table, which names each member once and nothing
// else. A block with such a header anywhere else (another doc comment) is a
// table out of place.
//
// The lists. Every other comment that documents something (package
// comments, the docs of types, funcs, methods, consts, vars and fields, and
// the comments at the end of a field's or value's line, exported or not) is
// split into blocks as go/doc/comment does for a gofmt'ed comment:
// paragraphs, list items (each item on its own), headings, and preformatted
// blocks. Preformatted blocks (code, diagrams, formulas, tables) are not
// prose and are not read. Prose is split into sentences at ".", "!" or "?"
// (and any closing ")", '"' or "'") followed by a space and a character that
// is not a lower-case letter, or a Go name in lower case ("t.Attempt",
// "submitTask"; not after "e.g." or "i.e."). A sentence that names three or
// more distinct members of one set, and not all of them, fails the test.
//
// What names a member in a sentence (the matcher):
//   - An identifier path as a whole word: "WorkerPool.Go", "Group.Go",
//     "p.Go", "Status.Busy", "WithName". "T.Name" names the member Name of
//     type T only: "TaskInfo.Label" never names a TaskOption field Label.
//     "x.Name", with x a lower-case name that is not one of the packages the
//     package imports (context.Canceled is not the field Status.Canceled),
//     names Name of whatever type has it. Name alone names it too.
//   - A name that several members share (WorkerPool.Go and Group.Go) means,
//     bare or after a lower-case qualifier, the member of the type with the
//     most members in the set, unless the sentence names that one in full;
//     then the next.
//   - A bare name is doubtful when it is an everyday word or a name the
//     package also gives something else: Go, Do, Wait, Key, Label, Delay,
//     Weight, Priority, Retry, Block, Status, Panic; any name that is also a
//     package-level name, or a field or method of another type, of this
//     package (Status.State and type State); and a one-word name (no inner
//     upper-case letter, as "Busy") that begins its sentence. A doubtful
//     name counts only in a list: next to a ",", "and", "or", "nor", "+",
//     "|", "/" or "&", in a sentence that also names, for sure, another
//     member of the same set. Followed by a space and a digit ("Go 1.25") it
//     never counts.
//   - Sure: any other bare name; and any name in brackets ("[Go]",
//     "[WorkerPool.Go]", "[*PanicError]"), in backquotes, qualified, or,
//     for a func or method, followed by "(".

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// docListHint is what every list that misses members is told.
const docListHint = "name them all, or link the table in doc.go (see the package doc's reference tables) instead of listing them"

// TestDocListsNameEveryMember checks the package's own doc comments: one
// reference table per set in doc.go, naming every member, and no partial
// list anywhere else.
func TestDocListsNameEveryMember(t *testing.T) {
	pkg, err := loadDocPackage(".")
	if err != nil {
		t.Fatal(err)
	}
	some := false
	for _, set := range pkg.sets {
		some = some || len(set.members) > 0
	}
	if !some {
		t.Fatal("found no member of any set (calls with options, pool options, errors, TaskOption, Hooks or Status fields): the test's reading of the source is broken")
	}
	problems := pkg.check()
	for _, set := range pkg.sets {
		t.Run(strings.ReplaceAll(set.title, " ", "_"), func(t *testing.T) {
			for _, p := range problems[set.header] {
				t.Error(p)
			}
		})
	}
}

// TestDocListMatcher checks the sentence matcher and the block splitter on
// made-up comments, against a made-up set of calls with options.
func TestDocListMatcher(t *testing.T) {
	calls := newDocSet("Call", "calls with options", "",
		docMember{name: "WorkerPool.Go", short: "Go", owner: "WorkerPool", fn: true},
		docMember{name: "WorkerPool.DoContext", short: "DoContext", owner: "WorkerPool", fn: true},
		docMember{name: "WorkerPool.DoWaitContext", short: "DoWaitContext", owner: "WorkerPool", fn: true},
		docMember{name: "Group.Go", short: "Go", owner: "Group", fn: true},
		docMember{name: "Call", short: "Call", fn: true},
	)
	status := newDocSet("Status", "Status fields", "",
		docMember{name: "Status.State", short: "State", owner: "Status"},
		docMember{name: "Status.Busy", short: "Busy", owner: "Status"},
		docMember{name: "Status.Waiting", short: "Waiting", owner: "Status"},
		docMember{name: "Status.Canceled", short: "Canceled", owner: "Status"},
		docMember{name: "Status.Dropped", short: "Dropped", owner: "Status"},
	)
	pkg := &docPackage{
		sets:    []*docSet{calls, status},
		imports: map[string]bool{"context": true},
	}
	// Status.State is also the name of a type of the package; and let
	// Call be an everyday word here, so that three members of the set are
	// doubtful.
	status.doubtful["State"] = true
	calls.doubtful["Call"] = true

	for _, tc := range []struct {
		name  string
		lines []string // a comment's lines, without "//"
		want  []string // "set: missing members" of each flagged sentence
	}{
		{"complete list", []string{
			"[WorkerPool.Go], [Call], [Group.Go], [WorkerPool.DoContext] and",
			"[WorkerPool.DoWaitContext] take options.",
		}, nil},
		{"complete list of bare names", []string{
			"Go, Call, Group.Go, DoContext and DoWaitContext take options.",
		}, nil},
		{"list missing one", []string{
			"Options apply to Go, Call, Group.Go and DoContext.",
		}, []string{"Call: WorkerPool.DoWaitContext"}},
		{"list missing two, in the second sentence of a list item", []string{
			"   - Plain tasks take none. With a handle, p.Go(ctx, f),",
			"     p.DoContext(ctx, f) and g.Go(f) do.",
		}, []string{"Call: WorkerPool.DoWaitContext, Call"}},
		{"a sentence that begins with a lower-case Go name", []string{
			"Go, Call and Group.Go take options. p.DoContext(ctx, f) and",
			"p.DoWaitContext(ctx, f) do too, e.g. p.DoContext(ctx, f).",
		}, []string{"Call: WorkerPool.DoContext, WorkerPool.DoWaitContext"}},
		{"two members", []string{
			"Go and DoContext take options.",
		}, nil},
		{"Go the language", []string{
			"Go 1.25 made DoContext and Group.Go faster.",
		}, nil},
		{"Go the language at the start of a list", []string{
			"Go 1.25, DoContext, Group.Go and Call: this names three.",
		}, []string{"Call: WorkerPool.Go, WorkerPool.DoWaitContext"}},
		{"doubtful words with nothing sure beside them", []string{
			"Go, Call and Go again, and State is running.",
		}, nil},
		{"another type's field is not a member", []string{
			"TaskInfo.Busy, TaskInfo.Waiting and TaskInfo.Dropped are not fields of Status.",
		}, nil},
		{"a package's name is not a qualifier", []string{
			"Wait returns context.Canceled, and Busy and Waiting go down.",
		}, nil},
		{"a sum of fields", []string{
			"It counts in Busy + Waiting + Canceled, once.",
		}, []string{"Status: Status.State, Status.Dropped"}},
		{"a one-word name that begins a sentence is doubtful", []string{
			"Busy workers, Waiting tasks and Canceled ones are shown.",
		}, nil},
		{"a table row is not prose", []string{
			"The calls with options:",
			"",
			"\tCall            notes",
			"\tWorkerPool.Go   returns a Task",
			"\tGroup.Go        joins the group",
			"\tCall            returns a Future",
			"",
			"That is all.",
		}, nil},
		{"the same rows as prose are", []string{
			"The calls with options:",
			"WorkerPool.Go returns a Task, Group.Go joins the group and",
			"Call returns a Future.",
		}, []string{"Call: WorkerPool.DoContext, WorkerPool.DoWaitContext"}},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			c := docComment{file: "x.go", what: "a test comment"}
			for i, l := range tc.lines {
				c.lines = append(c.lines, docLine{line: i + 1, text: l})
			}
			var got []string
			for _, f := range pkg.proseFindings(c) {
				got = append(got, f.set.header+": "+strings.Join(f.missing, ", "))
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("flagged:\n\t%s\nwant:\n\t%s", strings.Join(got, "\n\t"), strings.Join(tc.want, "\n\t"))
			}
		})
	}

	t.Run("table", func(t *testing.T) {
		var c docComment
		for i, l := range []string{
			"\tCall                  what it returns",
			"\tGo(ctx, fn, opts...)  a Task",
			"\t                      (continued)",
			"\tGroup.Go              nothing",
			"",
			"\tCall[T]               a Future",
			"\tSubmit                not a member",
			"\tWorkerPool.Go         again",
		} {
			c.lines = append(c.lines, docLine{line: i + 1, text: l})
		}
		blocks := docBlocks(c.lines)
		if len(blocks) != 1 || !blocks[0].code {
			t.Fatalf("want one preformatted block, got %d", len(blocks))
		}
		tab, ok := docTable(blocks[0])
		if !ok || tab.header != "Call" {
			t.Fatalf("not read as a Call table")
		}
		missing, extra, dup := calls.tableRows(tab)
		if got := strings.Join(missing, ","); got != "WorkerPool.DoContext,WorkerPool.DoWaitContext" {
			t.Errorf("missing: %s", got)
		}
		if len(extra) != 1 || extra[0].name != "Submit" || extra[0].line != 7 {
			t.Errorf("extra: %+v", extra)
		}
		if len(dup) != 1 || dup[0].name != "WorkerPool.Go" || min(dup[0].line, dup[0].other) != 2 || max(dup[0].line, dup[0].other) != 8 {
			t.Errorf("duplicates: %+v", dup)
		}
	})
}

// A docMember is one member of a set, as the code declares it.
type docMember struct {
	name  string // as the set names it: "WithName", "WorkerPool.Go", "Status.Busy"
	short string // the name alone: "WithName", "Go", "Busy"
	owner string // the receiver's or the struct's type; "" for a package-level name
	fn    bool   // a func or a method: a mention followed by "(" calls it
}

// A docSet is a set of members that a doc.go table lists.
type docSet struct {
	header   string // the first cell of its table's header row
	title    string // "calls with options"
	what     string // how the code makes a member of it
	members  []docMember
	doubtful map[string]bool  // short names that count only in a list
	byShort  map[string][]int // short name -> the members it names; first, the one of the type with the most members
}

// everydayWords are names that prose uses for other things (the language,
// an English word, another call or type of the package).
var everydayWords = []string{"Go", "Do", "Wait", "Key", "Label", "Delay", "Weight", "Priority", "Retry", "Block", "Status", "Panic"}

func newDocSet(header, title, what string, members ...docMember) *docSet {
	s := &docSet{header: header, title: title, what: what, members: members, doubtful: map[string]bool{}, byShort: map[string][]int{}}
	for _, w := range everydayWords {
		s.doubtful[w] = true
	}
	rank := map[string]int{}
	for i, m := range members {
		rank[m.owner]++
		s.byShort[m.short] = append(s.byShort[m.short], i)
	}
	for _, c := range s.byShort {
		sort.SliceStable(c, func(i, j int) bool { return rank[members[c[i]].owner] > rank[members[c[j]].owner] })
	}
	return s
}

// rowName is how a table row names m: a field of the table's own type by
// its name alone, anything else as the set names it.
func (s *docSet) rowName(m docMember) string {
	if m.owner == s.header {
		return m.short
	}
	return m.name
}

// candidates returns the members whose short name is short (of type owner,
// unless owner is ""), in the order a name they share is given to them.
func (s *docSet) candidates(owner, short string) []int {
	c := s.byShort[short]
	if owner == "" {
		return c
	}
	for _, i := range c {
		if s.members[i].owner == owner {
			return []int{i}
		}
	}
	return nil
}

// A docLine is one line of a comment, without its comment marker.
type docLine struct {
	line int
	text string
}

// A docComment is a comment that documents something.
type docComment struct {
	file   string
	what   string // "the package doc", "the doc of method WorkerPool.Go", ...
	lines  []docLine
	pkgDoc bool // doc.go's package comment: the home of the tables
}

// A docPackage is what the test reads from a directory's source.
type docPackage struct {
	sets     []*docSet
	comments []docComment
	imports  map[string]bool // the names the files give the packages they import
}

// loadDocPackage reads the non-test .go files of dir.
func loadDocPackage(dir string) (*docPackage, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var files []*ast.File
	pkgName := ""
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		if filepath.Base(name) == "doc.go" {
			pkgName = f.Name.Name
		}
		files = append(files, f)
	}
	if pkgName == "" {
		return nil, fmt.Errorf("%s has no doc.go: the package comment, with the reference tables, belongs in doc.go", dir)
	}

	pkg := &docPackage{imports: map[string]bool{}}
	var calls, options, errs []docMember
	fields := map[string][]docMember{}       // struct type -> its exported fields
	entities := map[string]map[string]bool{} // exported short name -> the names it is the short name of
	entity := func(name, short string) {
		if entities[short] == nil {
			entities[short] = map[string]bool{}
		}
		entities[short][name] = true
	}
	add := func(f *ast.File, g *ast.CommentGroup, what string) {
		if g == nil {
			return
		}
		file := filepath.Base(fset.Position(g.Pos()).Filename)
		pkg.comments = append(pkg.comments, docComment{
			file:   file,
			what:   what,
			lines:  commentLines(fset, g),
			pkgDoc: g == f.Doc && file == "doc.go",
		})
	}
	for _, f := range files {
		if f.Name.Name != pkgName {
			continue // a file of another package, as a generator's package main
		}
		file := filepath.Base(fset.Position(f.Pos()).Filename)
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			elems := strings.Split(path, "/")
			name := elems[len(elems)-1]
			if len(elems) > 1 && docMajor.MatchString(name) {
				name = elems[len(elems)-2] // example.com/x/v2 is package x
			}
			name, _, _ = strings.Cut(name, ".") // gopkg.in/yaml.v3 is package yaml
			if imp.Name != nil {
				name = imp.Name.Name
			}
			pkg.imports[name] = true
		}
		if f.Doc != nil {
			what := "the package doc"
			if file != "doc.go" {
				what = "a package doc outside doc.go"
			}
			add(f, f.Doc, what)
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				name, owner := d.Name.Name, ""
				if d.Recv != nil && len(d.Recv.List) == 1 {
					owner = docTypeName(d.Recv.List[0].Type)
					name = owner + "." + name
				}
				add(f, d.Doc, "the doc of func "+name)
				if !ast.IsExported(d.Name.Name) || (owner != "" && !ast.IsExported(owner)) {
					continue
				}
				entity(name, d.Name.Name)
				m := docMember{name: name, short: d.Name.Name, owner: owner, fn: true}
				if p := d.Type.Params.List; len(p) > 0 {
					if e, ok := p[len(p)-1].Type.(*ast.Ellipsis); ok && docTypeName(e.Elt) == "TaskOption" {
						calls = append(calls, m)
					}
				}
				if r := d.Type.Results; owner == "" && r != nil && len(r.List) == 1 && len(r.List[0].Names) <= 1 {
					if id, ok := r.List[0].Type.(*ast.Ident); ok && id.Name == "Option" {
						options = append(options, m)
					}
				}
			case *ast.GenDecl:
				single := !d.Lparen.IsValid() // "type T ...": d.Doc is T's doc
				if !single {
					add(f, d.Doc, "the doc of a "+d.Tok.String()+" group")
				}
				specDoc := func(doc *ast.CommentGroup) *ast.CommentGroup {
					if single && doc == nil {
						return d.Doc
					}
					return doc
				}
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						name := s.Name.Name
						add(f, specDoc(s.Doc), "the doc of type "+name)
						add(f, s.Comment, "the comment on type "+name)
						if ast.IsExported(name) {
							entity(name, name)
						}
						ast.Inspect(s.Type, func(n ast.Node) bool {
							st, ok := n.(*ast.StructType)
							if !ok {
								if it, ok := n.(*ast.InterfaceType); ok {
									for _, fl := range it.Methods.List {
										for _, id := range fl.Names {
											add(f, fl.Doc, "the doc of method "+name+"."+id.Name)
											add(f, fl.Comment, "the comment on method "+name+"."+id.Name)
											if ast.IsExported(id.Name) {
												entity(name+"."+id.Name, id.Name)
											}
										}
									}
								}
								return true
							}
							top := st == s.Type
							for _, fl := range st.Fields.List {
								ids := fl.Names
								if len(ids) == 0 { // embedded
									if n := docTypeName(fl.Type); n != "" {
										ids = []*ast.Ident{ast.NewIdent(n)}
									}
								}
								label := name + " field " + docIdentList(ids)
								add(f, fl.Doc, "the doc of "+label)
								add(f, fl.Comment, "the comment on "+label)
								for _, id := range ids {
									if !top || !ast.IsExported(id.Name) || !ast.IsExported(name) {
										continue
									}
									entity(name+"."+id.Name, id.Name)
									fields[name] = append(fields[name], docMember{name: name + "." + id.Name, short: id.Name, owner: name})
								}
							}
							return true
						})
					case *ast.ValueSpec:
						label := d.Tok.String() + " " + docIdentList(s.Names)
						add(f, specDoc(s.Doc), "the doc of "+label)
						add(f, s.Comment, "the comment on "+label)
						for _, id := range s.Names {
							if !ast.IsExported(id.Name) {
								continue
							}
							entity(id.Name, id.Name)
							if d.Tok == token.VAR && strings.HasPrefix(id.Name, "Err") {
								errs = append(errs, docMember{name: id.Name, short: id.Name})
							}
						}
					}
				}
			}
		}
	}
	delete(pkg.imports, pkgName)
	delete(pkg.imports, "_")
	delete(pkg.imports, ".")

	pkg.sets = []*docSet{
		newDocSet("Call", "calls with options", "an exported func, or an exported method of an exported type, whose last parameter is ...TaskOption", calls...),
		newDocSet("Option", "pool options", "an exported func whose result type is Option", options...),
		newDocSet("Error", "errors", "an exported package-level var whose name starts with Err", errs...),
		newDocSet("TaskOption", "TaskOption fields", "an exported field of struct type TaskOption", fields["TaskOption"]...),
	}
	// A short name that also names something else of the package (not a
	// member of the same set) is doubtful.
	for _, set := range pkg.sets {
		same := map[string]bool{}
		for _, m := range set.members {
			same[m.name] = true
		}
		for _, m := range set.members {
			for other := range entities[m.short] {
				if !same[other] {
					set.doubtful[m.short] = true
				}
			}
		}
	}
	return pkg, nil
}

// docTypeName returns the name of the type expression e: "WorkerPool" for
// *WorkerPool, Future for Future[T].
func docTypeName(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.ParenExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		case *ast.SelectorExpr:
			return x.Sel.Name
		default:
			return ""
		}
	}
}

func docIdentList(ids []*ast.Ident) string {
	var s []string
	for _, id := range ids {
		s = append(s, id.Name)
	}
	return strings.Join(s, ", ")
}

// commentLines returns g's lines as go/ast's CommentGroup.Text sees them
// (without "//" and one space after it; directives left out), each with its
// line in the file.
func commentLines(fset *token.FileSet, g *ast.CommentGroup) []docLine {
	var lines []docLine
	for _, c := range g.List {
		line := fset.Position(c.Pos()).Line
		if strings.HasPrefix(c.Text, "//") {
			t := c.Text[2:]
			if strings.HasPrefix(t, " ") {
				t = t[1:]
			} else if docDirective.MatchString(t) {
				continue
			}
			lines = append(lines, docLine{line, strings.TrimRight(t, " \t")})
			continue
		}
		for i, t := range strings.Split(strings.TrimSuffix(strings.TrimPrefix(c.Text, "/*"), "*/"), "\n") {
			lines = append(lines, docLine{line + i, strings.TrimRight(t, " \t")})
		}
	}
	return lines
}

var docMajor = regexp.MustCompile(`^v[0-9]+$`)

var docDirective = regexp.MustCompile(`^(line |extern |export |[a-z0-9]+:[a-z0-9])`)

// A docBlock is a paragraph, a heading, one list item, or a preformatted
// block of a comment.
type docBlock struct {
	code  bool // preformatted; its lines as they are, else trimmed, list marker removed
	lines []docLine
}

// docBlocks splits a comment's lines into blocks as go/doc/comment does
// for a gofmt'ed comment: a span of unindented lines is a paragraph (or a
// heading); a span of indented (and blank) lines is a list if its first
// line is a list item, or else a preformatted block.
func docBlocks(lines []docLine) []docBlock {
	blank := func(i int) bool { return strings.TrimSpace(lines[i].text) == "" }
	indented := func(i int) bool {
		t := lines[i].text
		return t != "" && (t[0] == ' ' || t[0] == '\t')
	}
	var blocks []docBlock
	for i := 0; ; {
		for i < len(lines) && blank(i) {
			i++
		}
		if i >= len(lines) {
			return blocks
		}
		start := i
		if !indented(i) {
			for i < len(lines) && !blank(i) && !indented(i) {
				i++
			}
			b := docBlock{}
			for _, l := range lines[start:i] {
				b.lines = append(b.lines, docLine{l.line, strings.TrimSpace(l.text)})
			}
			blocks = append(blocks, b)
			continue
		}
		for i < len(lines) && (blank(i) || indented(i)) {
			i++
		}
		end := i
		for end > start && blank(end-1) {
			end--
		}
		if docListMarker(lines[start].text) == 0 {
			blocks = append(blocks, docBlock{code: true, lines: lines[start:end]})
			continue
		}
		var item *docBlock
		for j := start; j < end; j++ {
			if blank(j) {
				continue
			}
			t := strings.TrimSpace(lines[j].text)
			if n := docListMarker(lines[j].text); n > 0 {
				blocks = append(blocks, docBlock{})
				item = &blocks[len(blocks)-1]
				t = strings.TrimSpace(strings.TrimLeft(lines[j].text, " \t")[n:])
			}
			item.lines = append(item.lines, docLine{lines[j].line, t})
		}
	}
}

// docListMarker returns the length of the list marker ("-", "*", "+", "•",
// "1.", "1)") that begins the indented line t, or 0.
func docListMarker(t string) int {
	t = strings.TrimLeft(t, " \t")
	n := 0
	if r, size := utf8.DecodeRuneInString(t); strings.ContainsRune("-*+•", r) {
		n = size
	} else {
		for n < len(t) && '0' <= t[n] && t[n] <= '9' {
			n++
		}
		if n == 0 || n >= len(t) || (t[n] != '.' && t[n] != ')') {
			return 0
		}
		n++
	}
	if n < len(t) && t[n] != ' ' && t[n] != '\t' {
		return 0
	}
	return n
}

// A docSentence is one sentence of prose, with the line it begins on.
type docSentence struct {
	line int
	text string
}

// docSentences splits a prose block into sentences.
func docSentences(b docBlock) []docSentence {
	var text strings.Builder
	var offs, lineNos []int
	for _, l := range b.lines {
		if text.Len() > 0 {
			text.WriteByte(' ')
		}
		offs = append(offs, text.Len())
		lineNos = append(lineNos, l.line)
		text.WriteString(l.text)
	}
	s := text.String()
	lineAt := func(off int) int {
		i := sort.SearchInts(offs, off+1) - 1
		return lineNos[max(i, 0)]
	}
	var out []docSentence
	start := 0
	flush := func(end int) {
		if t := strings.TrimSpace(s[start:end]); t != "" {
			lead := len(s[start:end]) - len(strings.TrimLeft(s[start:end], " "))
			out = append(out, docSentence{lineAt(start + lead), t})
		}
		start = end
	}
	for i := 0; i < len(s); i++ {
		if !strings.ContainsRune(".!?", rune(s[i])) {
			continue
		}
		j := i + 1
		for j < len(s) && strings.ContainsRune(`)"'`, rune(s[j])) {
			j++
		}
		if j < len(s) && s[j] != ' ' {
			continue
		}
		k := j
		for k < len(s) && s[k] == ' ' {
			k++
		}
		if r, _ := utf8.DecodeRuneInString(s[k:]); k < len(s) && unicode.IsLower(r) &&
			(!docLowerIdent.MatchString(s[k:]) || docAbbrev.MatchString(s[:i])) {
			continue // not a sentence's end, unless a Go name begins the next: "t.Attempt is"
		}
		flush(j)
		i = j
	}
	flush(len(s))
	return out
}

var (
	// A name in lower case that begins a sentence: "t.Attempt", "submitTask".
	docLowerIdent = regexp.MustCompile(`^[a-z][A-Za-z0-9_]*(?:\.[A-Za-z_]|[A-Z])`)
	// An abbreviation whose dot ends no sentence: "e.g.", "i.e.".
	docAbbrev  = regexp.MustCompile(`\b[A-Za-z]\.[A-Za-z]$`)
	docInnerUp = regexp.MustCompile(`^.[^A-Z]*[A-Z]`)
)

// A docToken is an identifier path in a sentence, as a possible mention.
type docToken struct {
	owner     string // the exported type that qualifies it ("WorkerPool" in WorkerPool.Go)
	short     string // the name alone; "" for another package's name
	qual      bool   // qualified: "WorkerPool.Go", "p.Go"
	bracket   bool   // "[Go]", "[*PanicError]"
	backquote bool   // inside backquotes
	paren     bool   // followed by "("
	initial   bool   // the sentence's first word
	version   bool   // followed by a space and a digit: "Go 1.25"
	listed    bool   // next to a list's separator: ",", "and", "or", "+"...
}

// docListed reports whether text, which comes before (or after) a name in
// its sentence, ends (or begins) with the separator of a list's items: ",",
// "+", "|", "/", "&", "and", "or" or "nor", maybe with brackets,
// backquotes, parentheses or "*" in between.
func docListed(text string, before bool) bool {
	if before {
		text = strings.TrimRight(text, " []()*`")
	} else {
		text = strings.TrimLeft(text, " []()*`")
	}
	if text == "" {
		return false
	}
	c := text[0]
	if before {
		c = text[len(text)-1]
	}
	if strings.IndexByte(",+|/&", c) >= 0 {
		return true
	}
	for _, w := range []string{"and", "or", "nor"} {
		if before && strings.HasSuffix(text, w) && (len(text) == len(w) || !docWordByte(text[len(text)-len(w)-1])) ||
			!before && strings.HasPrefix(text, w) && (len(text) == len(w) || !docWordByte(text[len(w)])) {
			return true
		}
	}
	return false
}

func docWordByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// docIdentPaths returns the start and end of each identifier path
// ("WorkerPool.Go", "p.Go", "Busy") in text: words of ASCII letters,
// digits and "_" that begin with a letter or "_", joined by dots.
func docIdentPaths(text string) [][2]int {
	var out [][2]int
	for i := 0; i < len(text); {
		c := text[i]
		if !docWordByte(c) || '0' <= c && c <= '9' {
			for i++; i < len(text) && docWordByte(text[i]) && (c >= '0' && c <= '9'); i++ {
			}
			continue
		}
		a := i
		for {
			for i < len(text) && docWordByte(text[i]) {
				i++
			}
			if i+1 < len(text) && text[i] == '.' && docWordByte(text[i+1]) && !('0' <= text[i+1] && text[i+1] <= '9') {
				i++
				continue
			}
			break
		}
		out = append(out, [2]int{a, i})
	}
	return out
}

// docTokens returns the identifier paths of sentence.
func (pkg *docPackage) docTokens(sentence string) []docToken {
	var toks []docToken
	quotes, from := 0, 0
	for k, ab := range docIdentPaths(sentence) {
		a, b := ab[0], ab[1]
		quotes += strings.Count(sentence[from:a], "`")
		from = a
		parts := strings.Split(sentence[a:b], ".")
		t := docToken{
			short:     parts[len(parts)-1],
			qual:      len(parts) > 1 || (a > 0 && sentence[a-1] == '.'),
			bracket:   b < len(sentence) && sentence[b] == ']' && (a > 0 && sentence[a-1] == '[' || a > 1 && sentence[a-2:a] == "[*"),
			backquote: quotes%2 == 1,
			paren:     b < len(sentence) && sentence[b] == '(',
			initial:   k == 0,
			version:   b+1 < len(sentence) && sentence[b] == ' ' && '0' <= sentence[b+1] && sentence[b+1] <= '9',
			listed:    docListed(sentence[:a], true) || docListed(sentence[b:], false),
		}
		if len(parts) > 1 {
			q := parts[len(parts)-2]
			if ast.IsExported(q) {
				t.owner = q
			} else if pkg.imports[q] {
				t.short = "" // another package's name: context.Canceled
			}
		}
		toks = append(toks, t)
	}
	return toks
}

// named returns the members of the set that the tokens of a sentence name
// (see the rules at the top of this file), sorted.
func (s *docSet) named(toks []docToken) []string {
	named := map[int]bool{}
	type pending struct {
		cands []int
		sure  bool
		t     docToken
	}
	var rest []pending
	for _, t := range toks {
		if t.short == "" {
			continue
		}
		cands := s.candidates(t.owner, t.short)
		if len(cands) == 0 {
			continue
		}
		if t.owner != "" {
			named[cands[0]] = true
			continue
		}
		oneWord := !docInnerUp.MatchString(t.short)
		sure := t.bracket || t.backquote || t.qual || (t.paren && s.members[cands[0]].fn) ||
			!(s.doubtful[t.short] || t.initial && oneWord)
		if !sure && t.version {
			continue // "Go 1.25"
		}
		rest = append(rest, pending{cands, sure, t})
	}
	// Sure mentions first, so that a doubtful one only joins a list that
	// something sure names.
	sort.SliceStable(rest, func(i, j int) bool { return rest[i].sure && !rest[j].sure })
	for _, p := range rest {
		if !p.sure && (len(named) == 0 || !p.t.listed) {
			continue
		}
		pick := p.cands[0]
		for _, c := range p.cands {
			if !named[c] {
				pick = c
				break
			}
		}
		named[pick] = true
	}
	var out []string
	for i := range s.members {
		if named[i] {
			out = append(out, s.members[i].name)
		}
	}
	return out
}

// A docFinding is a sentence that names some members of a set, not all.
type docFinding struct {
	set     *docSet
	pos     string
	what    string
	text    string
	named   []string
	missing []string
}

// proseFindings returns the sentences of c that name three or more
// members of a set but not all of them.
func (pkg *docPackage) proseFindings(c docComment) []docFinding {
	var out []docFinding
	for _, b := range docBlocks(c.lines) {
		if b.code {
			continue
		}
		for _, s := range docSentences(b) {
			toks := pkg.docTokens(s.text)
			for _, set := range pkg.sets {
				named := set.named(toks)
				if len(named) < 3 || len(named) == len(set.members) {
					continue
				}
				in := map[string]bool{}
				for _, n := range named {
					in[n] = true
				}
				var missing []string
				for _, m := range set.members {
					if !in[m.name] {
						missing = append(missing, m.name)
					}
				}
				out = append(out, docFinding{set, fmt.Sprintf("%s:%d", c.file, s.line), c.what, s.text, named, missing})
			}
		}
	}
	return out
}

// A docTab is a reference table: its header's first cell and its rows.
type docTab struct {
	header string
	line   int
	rows   []docRow
}

type docRow struct {
	name  string // the identifier path of the first cell, or the cell itself if it has none
	line  int
	other int // for a row naming a member again: the line of the row that named it too
}

var docRowName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*`)
var docCellSep = regexp.MustCompile(`  +|\t`)

// docTable reads b as a reference table, if it is one.
func docTable(b docBlock) (docTab, bool) {
	if !b.code || len(b.lines) == 0 {
		return docTab{}, false
	}
	// The indent common to the non-blank lines.
	indent := ""
	first := true
	for _, l := range b.lines {
		if strings.TrimSpace(l.text) == "" {
			continue
		}
		lead := l.text[:len(l.text)-len(strings.TrimLeft(l.text, " \t"))]
		if first {
			indent, first = lead, false
		}
		for !strings.HasPrefix(lead, indent) {
			indent = indent[:len(indent)-1]
		}
	}
	head := strings.Fields(b.lines[0].text)
	tab := docTab{line: b.lines[0].line}
	if len(head) > 0 {
		tab.header = head[0]
	}
	switch tab.header {
	case "Call", "Option", "Error", "TaskOption":
	default:
		return docTab{}, false
	}
	for _, l := range b.lines[1:] {
		t := strings.TrimPrefix(l.text, indent)
		if strings.TrimSpace(t) == "" || t[0] == ' ' || t[0] == '\t' {
			continue // blank, or the row above continued
		}
		cell := docCellSep.Split(t, 2)[0]
		name := docRowName.FindString(strings.TrimLeft(cell, "[`*"))
		if name == "" {
			name = cell
		}
		tab.rows = append(tab.rows, docRow{name: name, line: l.line})
	}
	return tab, true
}

// tableRows matches a table's rows to the set's members: the members no
// row names, the rows that name no member, and the rows that name a member
// another row named before.
func (s *docSet) tableRows(tab docTab) (missing []string, extra, dup []docRow) {
	by := map[int]int{} // member -> the line of the row naming it
	var bare []docRow
	for _, r := range tab.rows {
		parts := strings.Split(r.name, ".")
		if len(parts) == 1 {
			bare = append(bare, r)
			continue
		}
		owner, short := parts[len(parts)-2], parts[len(parts)-1]
		c := s.candidates(owner, short)
		if len(parts) > 2 || len(c) == 0 {
			extra = append(extra, r)
		} else if _, ok := by[c[0]]; ok {
			dup = append(dup, docRow{s.members[c[0]].name, r.line, by[c[0]]})
		} else {
			by[c[0]] = r.line
		}
	}
	for _, r := range bare {
		c := s.candidates("", r.name)
		if len(c) == 0 {
			extra = append(extra, r)
			continue
		}
		pick := -1
		for _, i := range c {
			if _, ok := by[i]; !ok {
				pick = i
				break
			}
		}
		if pick < 0 {
			dup = append(dup, docRow{s.members[c[0]].name, r.line, by[c[0]]})
			continue
		}
		by[pick] = r.line
	}
	for i, m := range s.members {
		if _, ok := by[i]; !ok {
			missing = append(missing, s.rowName(m))
		}
	}
	sort.Slice(dup, func(i, j int) bool { return dup[i].line < dup[j].line })
	sort.Slice(extra, func(i, j int) bool { return extra[i].line < extra[j].line })
	return missing, extra, dup
}

// check returns, by set header, what the doc comments of pkg do wrong.
func (pkg *docPackage) check() map[string][]string {
	problems := map[string][]string{}
	tables := map[string][]docTab{}
	for _, c := range pkg.comments {
		for _, b := range docBlocks(c.lines) {
			tab, ok := docTable(b)
			if !ok {
				continue
			}
			if c.pkgDoc {
				tables[tab.header] = append(tables[tab.header], tab)
				continue
			}
			problems[tab.header] = append(problems[tab.header], fmt.Sprintf(
				"%s:%d: in %s, this preformatted block is a reference table (its header row begins with %q), "+
					"but the reference tables belong in the package comment in doc.go: move its rows to the %s table there, "+
					"and link to that table from here instead",
				c.file, tab.line, c.what, tab.header, tab.header))
		}
	}
	for _, set := range pkg.sets {
		tabs := tables[set.header]
		var names []string
		for _, m := range set.members {
			names = append(names, set.rowName(m))
		}
		switch {
		case len(tabs) == 0 && len(set.members) > 0 && set.header != "TaskOption": // the struct is its table
			var sample strings.Builder
			var rows []string
			w := len(set.header)
			for _, m := range set.members {
				n := set.rowName(m)
				rows = append(rows, n)
				w = max(w, len(n))
			}
			fmt.Fprintf(&sample, "\t%-*s  ...\n", w, set.header)
			for _, n := range rows {
				fmt.Fprintf(&sample, "\t%-*s  ...\n", w, n)
			}
			problems[set.header] = append(problems[set.header], fmt.Sprintf(
				"doc.go: the package comment has no reference table of the %s (each %s). "+
					"Add one to the package comment in doc.go: a tab-indented block whose header row's first cell is %q, "+
					"then one row per member whose first cell is its name, cells separated by two or more spaces:\n\n%s",
				set.title, set.what, set.header, sample.String()))
		case len(tabs) > 1:
			for _, tab := range tabs[1:] {
				problems[set.header] = append(problems[set.header], fmt.Sprintf(
					"doc.go:%d: a second %s table (the first is at doc.go:%d): merge them into one, each member named once",
					tab.line, set.header, tabs[0].line))
			}
		}
		for _, tab := range tabs {
			missing, extra, dup := set.tableRows(tab)
			if len(set.members) == 0 {
				missing = nil
			}
			if len(missing) > 0 {
				problems[set.header] = append(problems[set.header], fmt.Sprintf(
					"doc.go:%d: the %s table does not name %s: add a row for each to that table, its first cell the name (as %q)",
					tab.line, set.header, strings.Join(missing, ", "), missing[0]))
			}
			for _, r := range extra {
				if len(names) == 0 {
					problems[set.header] = append(problems[set.header], fmt.Sprintf(
						"doc.go:%d: the %s table names %s, but there are no %s (each would be %s): remove the table",
						r.line, set.header, r.name, set.title, set.what))
					continue
				}
				problems[set.header] = append(problems[set.header], fmt.Sprintf(
					"doc.go:%d: the %s table names %s, which is not one of the %s (each %s; they are %s): remove its row, or fix its name",
					r.line, set.header, r.name, set.title, set.what, strings.Join(names, ", ")))
			}
			for _, r := range dup {
				problems[set.header] = append(problems[set.header], fmt.Sprintf(
					"doc.go:%d: the %s table names %s twice (doc.go:%d and doc.go:%d): keep one row for it",
					min(r.line, r.other), set.header, r.name, min(r.line, r.other), max(r.line, r.other)))
			}
		}
	}
	for _, c := range pkg.comments {
		for _, f := range pkg.proseFindings(c) {
			problems[f.set.header] = append(problems[f.set.header], fmt.Sprintf(
				"%s: a sentence in %s names %d of the %d %s (%s) but not %s:\n\t%s\n%s",
				f.pos, f.what, len(f.named), len(f.set.members), f.set.title, strings.Join(f.named, ", "),
				strings.Join(f.missing, ", "), f.text, docListHint))
		}
	}
	return problems
}
