package workloads

import (
	"context"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/history"
)

// configClient answers a config client's operations: a read of version
// 5, an update to version 6 (or with no version, when noVersion), a
// watch.
type configClient struct {
	index     int
	noVersion bool
}

func (c *configClient) Do(_ context.Context, op Op) Result {
	switch op.F {
	case history.FReadConfig:
		return okWith(&history.Value{Version: history.Int64(5)})
	case history.FUpdate:
		if c.noVersion {
			return okWith(&history.Value{N: op.Value})
		}
		return okWith(&history.Value{N: op.Value, Version: history.Int64(6)})
	}
	return okWith(&history.Value{Version: history.Int64(5)})
}
func (c *configClient) SetPhase(Phase, string, int64) {}
func (c *configClient) Index() int                    { return c.index }
func (c *configClient) Process() int                  { return c.index + 100 }

// configEnd is a final phase whose clients reported the versions in
// applied, by process.
type configEnd struct {
	clients []Client
	applied map[int]int64
}

func (e *configEnd) Clients() []Client                         { return e.clients }
func (e *configEnd) FinalRead(context.Context, Client, string) {}
func (e *configEnd) Applied(c Client, _ string) (int64, bool) {
	v, ok := e.applied[c.Process()]
	return v, ok
}

// TestConfigFinalEndsOnceConverged: the config's final phase ends soon
// after every watcher reported the final version (ConvergedSettle), long
// before its bound; with one watcher behind, or an update answer without
// a version to wait for, it waits until its bound (here: until the
// context ends, the bound being two minutes).
func TestConfigFinalEndsOnceConverged(t *testing.T) {
	for _, tc := range []struct {
		name      string
		applied   map[int]int64
		noVersion bool
		early     bool
	}{
		{"every watcher on the final version", map[int]int64{101: 6, 102: 7}, false, true},
		{"one watcher behind", map[int]int64{101: 6, 102: 5}, false, false},
		{"one watcher silent", map[int]int64{101: 6}, false, false},
		{"no version in the update's answer", map[int]int64{101: 6, 102: 6}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			admin := &configClient{index: 0, noVersion: tc.noVersion}
			e := &configEnd{clients: []Client{admin, &configClient{index: 1}, &configClient{index: 2}}, applied: tc.applied}
			w := &Config{Admins: 1, SessionTimeout: time.Minute, watching: map[int]int{}}
			wait := ConvergedSettle + 2*time.Second
			ctx, cancel := context.WithTimeout(t.Context(), wait)
			defer cancel()
			w.Final(ctx, e)
			if early := ctx.Err() == nil; early != tc.early {
				t.Errorf("Final returned before %s: %v, want %v", wait, early, tc.early)
			}
		})
	}
}
