package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// exampleFile is a package with two examples, one that runs (it has an
// Output comment) and one that go test only compiles.
const exampleFile = `package demo_test

import "fmt"

func ExampleRuns() {
	for i := range 2 {
		fmt.Println(i)
	}
	// Output:
	// 0
	// 1
}

func ExampleNeverRuns() {
	fmt.Println("compiled only")
}
`

// setup writes a README and the example file into a new directory (the
// examples in its subdirectory demo) and returns the README's path.
func setup(t *testing.T, readme string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "demo"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "demo", "example_test.go"), []byte(exampleFile), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "README.md")
	if err := os.WriteFile(path, []byte(readme), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func run(t *testing.T, readme string, write bool) (path string, problems []string) {
	t.Helper()
	path = setup(t, readme)
	blocks, err := parseBlocks(readme)
	if err != nil {
		t.Fatal(err)
	}
	problems, _, err = check(path, readme, blocks, write)
	if err != nil {
		t.Fatal(err)
	}
	return path, problems
}

const whole = "for i := range 2 {\n\tfmt.Println(i)\n}\n// Output:\n// 0\n// 1\n"

func TestABlockThatIsTheExamplesBodyPasses(t *testing.T) {
	_, problems := run(t, "# x\n\n<!-- example: demo ExampleRuns -->\n```go\n"+whole+"```\n", false)
	if len(problems) != 0 {
		t.Fatalf("problems: %q", problems)
	}
}

func TestEachWayABlockCanDriftFails(t *testing.T) {
	for _, tc := range []struct {
		name, readme, want string
	}{
		{"no marker", "```go\n" + whole + "```\n", "without <!-- example"},
		{"changed line", "<!-- example: demo ExampleRuns -->\n```go\n" + strings.Replace(whole, "range 2", "range 3", 1) + "```\n", "differs from the body of ExampleRuns"},
		{"line missing", "<!-- example: demo ExampleRuns -->\n```go\n" + strings.Replace(whole, "// 1\n", "", 1) + "```\n", "differs"},
		{"no such example", "<!-- example: demo ExampleGone -->\n```go\n" + whole + "```\n", "no function ExampleGone"},
		{"example never run", "<!-- example: demo ExampleNeverRuns -->\n```go\nfmt.Println(\"compiled only\")\n```\n", "no // Output: comment"},
		{"excerpt not in body", "<!-- example: demo ExampleRuns excerpt -->\n```go\nfmt.Println(i + 1)\n```\n", "not an excerpt"},
		{"excerpt lines not consecutive", "<!-- example: demo ExampleRuns excerpt -->\n```go\nfor i := range 2 {\n}\n```\n", "not an excerpt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, problems := run(t, tc.readme, false)
			if len(problems) != 1 || !strings.Contains(problems[0], tc.want) {
				t.Fatalf("problems: %q, want one containing %q", problems, tc.want)
			}
		})
	}
}

func TestAnExcerptMayBeLessIndentedThanInTheExample(t *testing.T) {
	_, problems := run(t, "<!-- example: demo ExampleRuns excerpt -->\n```go\nfmt.Println(i)\n```\n", false)
	if len(problems) != 0 {
		t.Fatalf("problems: %q", problems)
	}
}

func TestWriteCopiesTheExampleIntoTheBlock(t *testing.T) {
	readme := "# x\n\n<!-- example: demo ExampleRuns -->\n```go\nold line\n```\n\ntext after\n"
	path, problems := run(t, readme, true)
	if len(problems) != 0 {
		t.Fatalf("problems: %q", problems)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := "# x\n\n<!-- example: demo ExampleRuns -->\n```go\n" + whole + "```\n\ntext after\n"
	if string(got) != want {
		t.Fatalf("README after -w:\n%s\nwant:\n%s", got, want)
	}
}

func TestAFenceWithoutALanguageIsRefused(t *testing.T) {
	if _, err := parseBlocks("```\ngo run .\n```\n"); err == nil {
		t.Fatal("parseBlocks accepted a fence with no language")
	}
	if _, err := parseBlocks("```sh\ngo run .\n"); err == nil {
		t.Fatal("parseBlocks accepted a block that is never closed")
	}
}

func TestCommandsAreTheShellLinesUnderTheHeading(t *testing.T) {
	blocks, err := parseBlocks("## First commands\n\n```sh\ngo run ./a\n\ncd b && go test\n```\n\n```text\nnot run\n```\n\n## Next\n\n```sh\nnot this\n```\n")
	if err != nil {
		t.Fatal(err)
	}
	got, err := shellLines(blocks, "First commands")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, "|") != "go run ./a|cd b && go test" {
		t.Fatalf("commands: %q", got)
	}
	if _, err := shellLines(blocks, "First command"); err == nil {
		t.Fatal("a heading with no sh block gave no error")
	}
}
