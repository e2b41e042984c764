// Command readmecheck keeps the README's code true.
//
// Every Go block of README.md mirrors a runnable example: the line before
// the block's opening fence names it,
//
//	<!-- example: ExampleWorkerPool_Go -->            the whole body of an example of the root package
//	<!-- example: natsfeed ExampleFeed excerpt -->    consecutive lines of an example of natsfeed
//
// and readmecheck fails when a block has no such line, when the example does
// not exist or has no "// Output:" comment (go test compiles an example
// without one but never runs it), or when the block differs from the
// example: the whole body, between its braces and one tab less indented,
// or for an excerpt, consecutive lines of it (compared after removing the
// tabs the lines share). CI then runs `go test` on every module, which
// compiles each example and checks its output. With -w, readmecheck
// rewrites each whole-body block from its example instead of failing.
//
// An excerpt does not compile alone, so the reader must be shown where the
// rest is: the first line of text after an excerpt's closing fence begins
// with a visible link to the file that declares the example,
//
//	Full example: [ExampleFeed](natsfeed/example_test.go)
//
// and an excerpt never shows "// Output:" (the lines shown could not print
// it alone; the full example does).
//
// Every fenced block names its language, so that no Go hides in an
// unnamed one; "go" and "golang", in any case, are Go. Only ``` fences are
// allowed: readmecheck refuses ~~~ fences and indented code blocks (four
// spaces or a tab after a blank line), which would hide a block from it. With -commands HEADING, readmecheck prints the lines of the
// shell blocks under that heading instead, for a script to run
// (.ci/first-commands).
//
// .ci/readme runs it (the tool is a module of its own, which go.work joins; it
// needs only the standard library).
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

func main() {
	readme := flag.String("readme", "README.md", "the README, relative to the repository's root")
	write := flag.Bool("w", false, "rewrite whole-body blocks from their examples instead of failing")
	commands := flag.String("commands", "", "print the lines of the shell blocks under this heading, and check nothing")
	flag.Parse()

	src, err := os.ReadFile(*readme)
	if err != nil {
		fatal(err)
	}
	blocks, err := parseBlocks(string(src))
	if err != nil {
		fatal(fmt.Errorf("%s: %w", *readme, err))
	}
	if *commands != "" {
		lines, err := shellLines(blocks, *commands)
		if err != nil {
			fatal(fmt.Errorf("%s: %w", *readme, err))
		}
		for _, l := range lines {
			fmt.Println(l)
		}
		return
	}

	problems, checked, err := check(*readme, string(src), blocks, *write)
	if err != nil {
		fatal(err)
	}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(os.Stderr, p)
		}
		os.Exit(1)
	}
	fmt.Printf("%s: %d go blocks, each the same as the example it names\n", *readme, checked)
}

// check compares the go blocks of the README at path readme (whose text is
// src) with their examples, and returns what differs and how many blocks it
// checked. With write, it rewrites whole-body blocks that differ instead.
func check(readme, src string, blocks []*block, write bool) (problems []string, checked int, err error) {
	root := filepath.Dir(readme)
	out := strings.Split(src, "\n")
	for _, b := range blocks {
		if b.lang != "go" {
			continue
		}
		checked++
		if b.marker == nil {
			problems = append(problems, fmt.Sprintf("%s:%d: a go block without <!-- example: ... --> on the line before it", readme, b.start))
			continue
		}
		body, file, err := exampleBody(filepath.Join(root, b.marker.dir), b.marker.name)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s:%d: %v", readme, b.start, err))
			continue
		}
		if b.marker.excerpt {
			if !containsRun(body, b.lines) {
				problems = append(problems, fmt.Sprintf("%s:%d: the block is not an excerpt of %s (in %s): its lines are not consecutive lines of the example's body",
					readme, b.start, b.marker.name, b.marker.dir))
			}
			for i, l := range b.lines {
				if isOutputComment(l) {
					problems = append(problems, fmt.Sprintf("%s:%d: an excerpt shows %q, which its lines cannot print alone: leave the output to the full example",
						readme, b.start+1+i, strings.TrimSpace(l)))
					break
				}
			}
			rel, err := filepath.Rel(root, file)
			if err != nil {
				return nil, 0, err
			}
			link := fmt.Sprintf("Full example: [%s](%s)", b.marker.name, filepath.ToSlash(rel))
			if !strings.HasPrefix(b.after, link) {
				problems = append(problems, fmt.Sprintf("%s:%d: an excerpt does not compile alone: the first line after it must begin with the visible link %q, not %q",
					readme, b.end, link, b.after))
			}
			continue
		}
		if equal(body, b.lines) {
			continue
		}
		if write {
			// Replace the block's lines (after the opening fence, before
			// the closing one) in out; blocks are rewritten from the last
			// one up, see below.
			b.replacement = body
			continue
		}
		problems = append(problems, fmt.Sprintf("%s:%d: the block differs from the body of %s (in %s); %s\n%s",
			readme, b.start, b.marker.name, b.marker.dir, "run `.ci/readme -w` to copy the example into the README",
			firstDifference(body, b.lines)))
	}
	if write {
		for i := len(blocks) - 1; i >= 0; i-- {
			b := blocks[i]
			if b.replacement == nil {
				continue
			}
			// b.start is the 1-based line of the opening fence: the body
			// is out[b.start : b.start+len(b.lines)].
			tail := append([]string{}, out[b.start+len(b.lines):]...)
			out = append(append(out[:b.start], b.replacement...), tail...)
		}
		if err := os.WriteFile(readme, []byte(strings.Join(out, "\n")), 0o644); err != nil {
			return nil, 0, err
		}
	}
	return problems, checked, nil
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "readmecheck:", err)
	os.Exit(1)
}

// A block is one fenced code block of the README.
type block struct {
	lang        string   // the first word after the opening fence, lower case; "golang" is "go"
	start       int      // the opening fence's line, 1-based
	end         int      // the closing fence's line, 1-based
	lines       []string // the lines between the fences
	after       string   // the first line after the closing fence that is not blank
	heading     string   // the text of the last "## " heading above the block
	marker      *marker  // from the line before the opening fence, if it is one
	replacement []string // -w: the example's body, to replace lines with
}

// A marker names the example a Go block mirrors.
type marker struct {
	dir     string // the package's directory, relative to the README's
	name    string // the example function
	excerpt bool   // the block is consecutive lines of the body, not all of it
}

var markerRE = regexp.MustCompile(`^<!-- example: (.*) -->$`)

func parseBlocks(src string) ([]*block, error) {
	var blocks []*block
	var cur *block
	fence := 0 // the backticks of cur's opening fence
	heading, prev := "", ""
	all := strings.Split(src, "\n")
	for i, line := range all {
		// A fence may be indented by up to three spaces, and be longer
		// than three characters; the closing fence is at least as long.
		trimmed := strings.TrimLeft(line, " ")
		fenced := len(line)-len(trimmed) <= 3
		ticks := len(trimmed) - len(strings.TrimLeft(trimmed, "`"))
		switch {
		case cur != nil && fenced && ticks >= fence && strings.TrimSpace(trimmed) == strings.Repeat("`", ticks):
			cur.end = i + 1
			for _, l := range all[i+1:] {
				if strings.TrimSpace(l) != "" {
					cur.after = strings.TrimSpace(l)
					break
				}
			}
			blocks = append(blocks, cur)
			cur = nil
		case cur != nil:
			cur.lines = append(cur.lines, line)
		case fenced && ticks >= 3:
			info := strings.Fields(trimmed[ticks:])
			if len(info) == 0 {
				return nil, fmt.Errorf("%d: a fenced block names no language (go, sh, promql, text...)", i+1)
			}
			lang := strings.ToLower(info[0])
			if lang == "golang" {
				lang = "go"
			}
			fence = ticks
			cur = &block{lang: lang, start: i + 1, heading: heading}
			if m := markerRE.FindStringSubmatch(strings.TrimSpace(prev)); m != nil {
				mk, err := parseMarker(m[1])
				if err != nil {
					return nil, fmt.Errorf("%d: %w", i, err)
				}
				cur.marker = mk
			}
		case fenced && strings.HasPrefix(trimmed, "~~~"):
			return nil, fmt.Errorf("%d: a ~~~ fence: fence code with ``` and name its language, so that readmecheck checks it", i+1)
		case strings.TrimSpace(prev) == "" && strings.TrimSpace(line) != "" && (strings.HasPrefix(line, "    ") || strings.HasPrefix(line, "\t")):
			return nil, fmt.Errorf("%d: an indented code block (four spaces or a tab after a blank line): fence it with ``` and name its language, or indent the text less", i+1)
		case strings.HasPrefix(line, "## "):
			heading = strings.TrimSpace(strings.TrimPrefix(line, "## "))
		}
		prev = line
	}
	if cur != nil {
		return nil, fmt.Errorf("%d: a fenced block is never closed", cur.start)
	}
	return blocks, nil
}

func parseMarker(s string) (*marker, error) {
	f := strings.Fields(s)
	m := &marker{dir: "."}
	if len(f) > 0 && f[len(f)-1] == "excerpt" {
		m.excerpt = true
		f = f[:len(f)-1]
	}
	switch len(f) {
	case 1:
		m.name = f[0]
	case 2:
		m.dir, m.name = f[0], f[1]
	default:
		return nil, fmt.Errorf("marker %q: want \"[dir] ExampleName [excerpt]\"", s)
	}
	if !strings.HasPrefix(m.name, "Example") {
		return nil, fmt.Errorf("marker %q: %s is not an example function", s, m.name)
	}
	return m, nil
}

// exampleBody returns the lines between the braces of the function name
// declared in a _test.go file of dir, one tab less indented, and that
// file.
func exampleBody(dir, name string) ([]string, string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		return nil, "", err
	}
	fset := token.NewFileSet()
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			return nil, "", err
		}
		f, err := parser.ParseFile(fset, file, src, parser.ParseComments)
		if err != nil {
			return nil, "", err
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || fn.Name.Name != name || fn.Body == nil {
				continue
			}
			if !hasOutput(f, fn) {
				return nil, "", fmt.Errorf("%s (%s) has no // Output: comment, so go test never runs it", name, file)
			}
			open := fset.Position(fn.Body.Lbrace).Offset
			end := fset.Position(fn.Body.Rbrace).Offset
			text := string(src[open+1 : end])
			text = strings.TrimPrefix(text, "\n")
			text = strings.TrimSuffix(text, "\n")
			lines := strings.Split(text, "\n")
			for i, l := range lines {
				lines[i] = strings.TrimPrefix(l, "\t")
			}
			return lines, file, nil
		}
	}
	return nil, "", fmt.Errorf("no function %s in %s/*_test.go", name, dir)
}

func hasOutput(f *ast.File, fn *ast.FuncDecl) bool {
	for _, g := range f.Comments {
		if g.Pos() < fn.Body.Lbrace || g.End() > fn.Body.Rbrace {
			continue
		}
		for _, c := range g.List {
			if isOutputComment(c.Text) {
				return true
			}
		}
	}
	return false
}

// isOutputComment reports whether the line is an example's "// Output:" or
// "// Unordered output:" comment.
func isOutputComment(line string) bool {
	t := strings.TrimSpace(line)
	if !strings.HasPrefix(t, "//") {
		return false
	}
	t = strings.TrimSpace(strings.TrimPrefix(t, "//"))
	return strings.HasPrefix(t, "Output:") || strings.HasPrefix(t, "Unordered output:")
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if strings.TrimRight(a[i], " \t") != strings.TrimRight(b[i], " \t") {
			return false
		}
	}
	return true
}

// containsRun reports whether run is len(run) consecutive lines of body,
// once the tabs that begin every non-blank line of each are removed.
func containsRun(body, run []string) bool {
	if len(run) == 0 {
		return false
	}
	want := dedent(run)
	for i := 0; i+len(run) <= len(body); i++ {
		if equal(dedent(body[i:i+len(run)]), want) {
			return true
		}
	}
	return false
}

func dedent(lines []string) []string {
	common := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		n := len(l) - len(strings.TrimLeft(l, "\t"))
		if common < 0 || n < common {
			common = n
		}
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		if len(l) >= common && common > 0 {
			l = l[common:]
		}
		out[i] = l
	}
	return out
}

func firstDifference(want, got []string) string {
	for i := 0; i < max(len(want), len(got)); i++ {
		var w, g string
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		if strings.TrimRight(w, " \t") != strings.TrimRight(g, " \t") {
			return fmt.Sprintf("  first difference, line %d of the block:\n    example: %q\n    README:  %q", i+1, w, g)
		}
	}
	return ""
}

// shellLines returns the lines of the sh blocks under the heading, blank
// lines left out. It fails if the heading has none: a renamed heading must
// not turn the check into one that runs nothing.
func shellLines(blocks []*block, heading string) ([]string, error) {
	var lines []string
	for _, b := range blocks {
		if b.heading != heading || b.lang != "sh" {
			continue
		}
		for _, l := range b.lines {
			if strings.TrimSpace(l) != "" {
				lines = append(lines, l)
			}
		}
	}
	if len(lines) == 0 {
		return nil, fmt.Errorf("no sh block under the heading %q", heading)
	}
	return lines, nil
}
