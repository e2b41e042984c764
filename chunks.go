package workerpool

// chunkLen is how many values a chunk of a chunks queue holds: with its
// link and the header the allocator puts before an object of pointers
// this large, a chunk of funcs takes 8 KiB, one of the allocator's size
// classes (one more value would take the next class, 9.25 KiB).
const chunkLen = 1022

// chunks is a FIFO queue of linked chunks of chunkLen values: it grows by
// a chunk without copying what it holds (as a doubling buffer does, and a
// submitter that outruns the workers would pay for at each doubling), and
// keeps up to maxSpareChunks drained chunks, so that a backlog that comes and
// goes, up to that many chunks, allocates nothing once warm. The lane holds its tasks in one (see lane). Its zero
// value is an empty queue; it is not safe for concurrent use.
type chunks[T any] struct {
	head, tail *chunk[T]
	first      int // the index of the front value in head
	next       int // the index the next value goes to in tail
	n          int
	spare      *chunk[T] // drained chunks kept for the next that are needed, linked by next
	spares     int       // how many
}

// maxSpareChunks is the most drained chunks a chunks queue keeps: 64 KiB of
// funcs.
const maxSpareChunks = 8

type chunk[T any] struct {
	values [chunkLen]T
	next   *chunk[T]
}

// Len returns the number of values in the queue.
func (q *chunks[T]) Len() int { return q.n }

// PushBack adds v at the back of the queue.
func (q *chunks[T]) PushBack(v T) {
	if q.tail == nil || q.next == chunkLen {
		c := q.spare
		if c != nil {
			q.spare, c.next = c.next, nil
			q.spares--
		} else {
			c = new(chunk[T])
		}
		if q.tail == nil {
			q.head = c
		} else {
			q.tail.next = c
		}
		q.tail, q.next = c, 0
	}
	q.tail.values[q.next] = v
	q.next++
	q.n++
}

// PopFront removes and returns the front value; the queue must not be
// empty. The slot it leaves is cleared, so that the queue keeps no value
// it no longer holds reachable.
func (q *chunks[T]) PopFront() T {
	c := q.head
	v := c.values[q.first]
	var zero T
	c.values[q.first] = zero
	q.first++
	q.n--
	switch {
	case q.n == 0: // empty: the one chunk left starts over
		q.first, q.next = 0, 0
	case q.first == chunkLen: // head drained, and more chunks follow
		q.head, c.next = c.next, nil
		q.first = 0
		if q.spares < maxSpareChunks {
			c.next, q.spare = q.spare, c
			q.spares++
		}
	}
	return v
}
