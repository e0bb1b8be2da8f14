// Package pages holds the integration test of the pages that show stored
// runs: two real runs (fenced and unfenced, pause-holder), `chaos compare`
// on them, and `chaos serve` on their results folder fetched over real
// HTTP on loopback, every link followed, escapes refused, SIGINT ending it.
// The pages' own unit tests (hand-made run folders) are in runview,
// compare and serve.
package pages
