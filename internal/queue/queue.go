// Package queue holds the unbounded FIFO that both the recipes and the
// worker controller put between a producer that must never block and a
// consumer reading a channel.
package queue

import "sync"

// Queue is an unbounded FIFO in front of a channel. Producers such as the
// ZooKeeper client's event callback or a worker's stdout reader must never
// block on a slow consumer, and dropping an event would hide exactly what a
// run is meant to observe, so items are buffered without bound instead.
type Queue[T any] struct {
	mu     sync.Mutex
	items  []T
	closed bool
	notify chan struct{}
	out    chan T
}

// New starts the goroutine that feeds Out; it ends after Close once the
// queue has drained.
func New[T any]() *Queue[T] {
	q := &Queue[T]{notify: make(chan struct{}, 1), out: make(chan T)}
	go q.run()
	return q
}

// Push never blocks; after Close it drops v.
func (q *Queue[T]) Push(v T) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	q.items = append(q.items, v)
	q.mu.Unlock()
	q.wake()
}

// Close lets the queue deliver what it holds, then closes Out.
func (q *Queue[T]) Close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.wake()
}

// Out delivers pushed items in order and is closed after Close once drained.
func (q *Queue[T]) Out() <-chan T { return q.out }

func (q *Queue[T]) wake() {
	select {
	case q.notify <- struct{}{}:
	default:
	}
}

func (q *Queue[T]) run() {
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
		q.items[0] = zero // let the delivered item be collected
		q.items = q.items[1:]
		q.mu.Unlock()
		q.out <- v
	}
}
