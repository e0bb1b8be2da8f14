package recipes

import "sync"

// queue is an unbounded FIFO in front of a channel. The ZooKeeper client
// calls our event callback on its own goroutines and must never block, and
// dropping a session or lost-lock event would hide exactly what the run is
// meant to observe, so events are buffered without bound instead.
type queue[T any] struct {
	mu     sync.Mutex
	items  []T
	closed bool
	notify chan struct{}
	out    chan T
}

func newQueue[T any]() *queue[T] {
	q := &queue[T]{notify: make(chan struct{}, 1), out: make(chan T)}
	go q.run()
	return q
}

// push never blocks; after close it drops v.
func (q *queue[T]) push(v T) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	q.items = append(q.items, v)
	q.mu.Unlock()
	q.wake()
}

// close lets the queue deliver what it holds, then closes out.
func (q *queue[T]) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.wake()
}

func (q *queue[T]) wake() {
	select {
	case q.notify <- struct{}{}:
	default:
	}
}

func (q *queue[T]) run() {
	for {
		q.mu.Lock()
		if len(q.items) == 0 {
			closed := q.closed
			q.mu.Unlock()
			if closed {
				close(q.out)
				return
			}
			<-q.notify
			continue
		}
		v := q.items[0]
		var zero T
		q.items[0] = zero
		q.items = q.items[1:]
		q.mu.Unlock()
		q.out <- v
	}
}
