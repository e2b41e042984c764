package natsfeedtest

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestRunWaitsForFeedAtTheTestsEnd: a test that ends without calling
// Run's stop (as one that fails on the way does) cancels the feed's ctx
// and waits for the feed to return, drain included, before it ends: no
// feed outlives its test, to run on against a server being stopped.
func TestRunWaitsForFeedAtTheTestsEnd(t *testing.T) {
	var returned atomic.Bool
	t.Run("stop never called", func(t *testing.T) {
		Run(t, func(ctx context.Context) error {
			<-ctx.Done()
			time.Sleep(50 * time.Millisecond) // the drain
			returned.Store(true)
			return nil
		})
	})
	if !returned.Load() {
		t.Fatal("the feed was still running when its test ended")
	}
}
