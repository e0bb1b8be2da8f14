package recipes

// WakeupCounter is implemented by recipes that count how often a watch
// woke them while they waited for a lock. The worker reports the count
// with every acquire answer, so the herd statistics can compare wake-ups
// with hand-offs: a recipe that watches its predecessor wakes about once
// per hand-off, one that watches the head wakes every waiter every time.
type WakeupCounter interface {
	// Wakeups is the number of watch wake-ups since the recipe started.
	Wakeups() int64
}
