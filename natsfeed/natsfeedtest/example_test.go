package natsfeedtest_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/e86d9661/workerpool"
	"github.com/e86d9661/workerpool/natsfeed"
	"github.com/e86d9661/workerpool/natsfeed/natsfeedtest"
	"github.com/nats-io/nats.go/jetstream"
)

// A test of a worker built on natsfeed, against a real embedded server:
// Jobs publishes the jobs, Run runs the Feed, and stop drains it. Jobs and
// Run take the test's t, so this example is compiled and not run; its
// test, TestJobsAndRun, runs the same steps.
func ExampleRun() {
	testWorker := func(t *testing.T) {
		_, cons := natsfeedtest.Jobs(t, 10)
		pool := workerpool.New(4)
		defer pool.StopWait()
		var handled atomic.Int64
		stop := natsfeedtest.Run(t, func(ctx context.Context) error {
			return natsfeed.Feed(ctx, pool, cons, func(ctx context.Context, msg jetstream.Msg) error {
				handled.Add(1) // the worker's handler under test
				return nil
			})
		})
		for handled.Load() < 10 {
			time.Sleep(time.Millisecond)
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	}
	_ = testWorker
}

// Jobs gives a test a server holding n jobs, and the consumer a Feed
// takes them from; the jobs' bodies are "0" to "n-1". This example is
// compiled and not run, as it needs a test's t.
func ExampleJobs() {
	testConsumer := func(t *testing.T) {
		_, cons := natsfeedtest.Jobs(t, 3)
		batch, err := cons.Fetch(3, jetstream.FetchMaxWait(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for msg := range batch.Messages() {
			t.Logf("job %s", msg.Data()) // job 0, job 1, job 2
			_ = msg.Ack()
		}
	}
	_ = testConsumer
}
