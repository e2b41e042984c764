package workerpool_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/e86d9661/workerpool"
)

func ExampleWorkerPool_Go() {
	p := workerpool.New(2)
	defer p.StopWait()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // covers queue wait and run
	defer cancel()
	task := p.Go(ctx, func(context.Context) error {
		return errors.New("disk full")
	})
	fmt.Println(task.Wait())

	// A panic comes back as an error, with the task's stack.
	var pe *workerpool.PanicError
	err := p.Go(ctx, func(context.Context) error { panic("bug") }).Wait()
	fmt.Println(errors.As(err, &pe), pe.Value)
	// Output:
	// disk full
	// true bug
}

// Typed results, collected in submission order whatever order the tasks
// finish in.
func ExampleCall() {
	p := workerpool.New(3)
	defer p.StopWait()

	words := []string{"pool", "dispatcher", "worker", "deque"}
	futures := make([]*workerpool.Future[int], len(words))
	for i, w := range words {
		futures[i] = workerpool.Call(context.Background(), p, func(context.Context) (int, error) {
			return len(w), nil
		})
	}
	for i, f := range futures {
		n, err := f.Wait()
		fmt.Println(words[i], n, err)
	}
	// Output:
	// pool 4 <nil>
	// dispatcher 10 <nil>
	// worker 6 <nil>
	// deque 5 <nil>
}
