package workerpool_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/e86d9661/workerpool"
)

// Map streams the lines of a file through the pool: at most a window of
// lines is read ahead of what the loop has printed, the results come in
// the file's order, and an item's error comes in its place.
func ExampleMap() {
	p := workerpool.New(4)
	defer p.StopWait()
	lines := bufio.NewScanner(strings.NewReader("3\n14\nx\n15\n"))
	in := func(yield func(string) bool) { // an iter.Seq[string]
		for lines.Scan() && yield(lines.Text()) {
		}
	}
	square := func(_ context.Context, line string) (int, error) {
		n, err := strconv.Atoi(line)
		return n * n, err
	}
	for sq, err := range workerpool.Map(context.Background(), p, in, square) {
		if err != nil {
			fmt.Println("error:", errors.Unwrap(err))
			continue // or break: the items in flight are canceled
		}
		fmt.Println(sq)
	}
	// Output:
	// 9
	// 196
	// error: invalid syntax
	// 225
}

// MapUnordered yields each result as its task ends; a window of 1 makes
// it run the items one at a time.
func ExampleMapUnordered() {
	p := workerpool.New(4)
	defer p.StopWait()
	words := func(yield func(string) bool) {
		for _, w := range []string{"a", "bb", "ccc"} {
			if !yield(w) {
				return
			}
		}
	}
	total := 0
	for n, err := range workerpool.MapUnordered(context.Background(), p, words, func(_ context.Context, w string) (int, error) {
		return len(w), nil
	}, workerpool.TaskOption{Window: 1, Label: "measure"}) {
		if err == nil {
			total += n
		}
	}
	fmt.Println("total:", total)
	// Output: total: 6
}
