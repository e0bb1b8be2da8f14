// Package clientfaults holds the integration tests of the client-side
// faults (pause-worker, expire-holder, isolate-holder) on the real
// ensemble: each fault takes effect verifiably, is undone, keeps fenced
// runs valid and corrupts unfenced ones where it should. What a controller
// killed during an isolation leaves is tested in tests/core; tests/core
// also says why integration tests are split into packages.
package clientfaults
