package workerpool

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The lane's queue is a FIFO across chunk boundaries, clears what it pops,
// and, once warm, fills and drains without allocating.
func TestChunksQueueInOrderAcrossChunks(t *testing.T) {
	var q chunks[int]
	next, want := 0, 0
	for _, n := range []int{1, chunkLen - 1, chunkLen, chunkLen + 1, 3*chunkLen + 7} {
		for range n {
			q.PushBack(next)
			next++
		}
		require.Equal(t, n, q.Len())
		for range n / 2 { // half out, more in, then all out
			assert.Equal(t, want, q.PopFront())
			want++
		}
		for range n {
			q.PushBack(next)
			next++
		}
		for q.Len() > 0 {
			require.Equal(t, want, q.PopFront())
			want++
		}
	}
	assert.Equal(t, next, want)
}

func TestChunksKeepNothingPopped(t *testing.T) {
	var q chunks[*int]
	for range 2*chunkLen + 3 {
		q.PushBack(new(int))
	}
	for range chunkLen + 1 {
		q.PopFront()
	}
	for c := q.head; c != nil; c = c.next {
		for i, v := range c.values {
			live := c == q.head && i >= q.first || c != q.head && (c != q.tail || i < q.next)
			assert.Equal(t, live, v != nil, "slot %d", i)
		}
	}
	for c := q.spare; c != nil; c = c.next {
		for _, v := range c.values {
			assert.Nil(t, v, "a spare chunk")
		}
	}
}

func TestChunksFillAndDrainWithoutAllocatingOnceWarm(t *testing.T) {
	var q chunks[func()]
	f := func() {}
	cycle := func() {
		for range (maxSpareChunks+1)*chunkLen - 5 {
			q.PushBack(f)
		}
		for q.Len() > 0 {
			q.PopFront()
		}
	}
	cycle()
	cycle()
	assert.Zero(t, testing.AllocsPerRun(20, cycle))
}
