// Package bench holds the integration test of `chaos bench`: one
// quick bench on a real ensemble, its bench.json complete,
// and nothing left behind. The speed targets are the bench's output, not
// this test's: it checks that every figure was measured and every target
// judged, never how fast anything was. See tests/core for why integration
// tests are split into packages.
package bench
