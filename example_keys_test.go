package workerpool_test

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/e86d9661/workerpool"
)

// Each account's operations run one at a time, in the order they were
// submitted, while different accounts run in parallel: WithKeys(1, nil)
// with the account as the key.
func ExampleTaskOption_key() {
	p := workerpool.New(4, workerpool.WithKeys(1, nil)) // Key alone would not run a key's tasks one at a time
	var mu sync.Mutex
	ledgers := map[string][]string{}
	for _, op := range []struct{ account, entry string }{
		{"acct-1", "+100"}, {"acct-2", "+50"}, {"acct-1", "-30"}, {"acct-2", "-50"}, {"acct-1", "+5"},
	} {
		p.Go(context.Background(), func(context.Context) error {
			mu.Lock()
			defer mu.Unlock()
			ledgers[op.account] = append(ledgers[op.account], op.entry)
			return nil
		}, workerpool.TaskOption{Key: op.account})
	}
	p.StopWait()
	fmt.Println(ledgers, "keys left:", p.Status().Keys)
	// Output: map[acct-1:[+100 -30 +5] acct-2:[+50 -50]] keys left: 0
}

// A tenant with a backlog does not starve another: keys share the pool by
// deficit round robin, here with twice the share for "big".
func ExampleWithKeys_share() {
	p := workerpool.New(1, workerpool.WithKeys(-1, func(tenant string) int {
		if tenant == "big" {
			return 2
		}
		return 1
	}))
	started, release := make(chan struct{}), make(chan struct{})
	p.Submit(func() { close(started); <-release }) // keeps the one worker busy
	<-started

	var order []string
	for _, tenant := range []string{"big", "big", "big", "big", "big", "big", "small", "small"} {
		p.DoContext(context.Background(), func() { order = append(order, tenant) }, workerpool.TaskOption{Key: tenant})
	}
	close(release)
	p.StopWait()
	fmt.Println(strings.Join(order, " "))
	// Output:
	// big big small big big small big big
}

// Politeness per host: at most 2 requests to one host at a time, however
// many workers are free; other hosts go past the held ones. The first two
// requests to a.example wait for each other, so two do run at once.
func ExampleWithKeys() {
	p := workerpool.New(8, workerpool.WithKeys(2, nil))
	ctx := context.Background()
	var mu sync.Mutex
	running, most := map[string]int{}, map[string]int{}
	var firstTwo sync.WaitGroup
	firstTwo.Add(2)
	fetch := func(host string, i int) {
		p.Go(ctx, func(context.Context) error {
			mu.Lock()
			running[host]++
			most[host] = max(most[host], running[host])
			mu.Unlock()
			if host == "a.example" && i < 2 {
				firstTwo.Done()
				firstTwo.Wait()
			}
			mu.Lock()
			running[host]--
			mu.Unlock()
			return nil
		}, workerpool.TaskOption{Key: host})
	}
	for i := range 6 {
		fetch("a.example", i)
	}
	fetch("b.example", 0)
	p.StopWait()
	fmt.Println("most at once:", most)
	// Output: most at once: map[a.example:2 b.example:1]
}
