package worker

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/zkchaos/zkchaos/client/recipes"
	"github.com/zkchaos/zkchaos/history"
)

// The config workload's side of the worker (docs/worker-protocol.md,
// "Config"): admins read-config and update, clients watch and report what
// they applied.

// configHandlers are the config workload's verbs.
func (w *worker) configHandlers() map[string]func(context.Context, Request) Message {
	return map[string]func(context.Context, Request) Message{
		"read-config": w.readConfig,
		"update":      w.update,
		"watch":       w.watch,
	}
}

// versionMessage reports v: version, digest, and the value when the data
// is in the admins' format.
func versionMessage(typ string, v recipes.ConfigVersion) Message {
	m := Message{Type: typ, Version: ptr(int64(v.Version)), Digest: history.ConfigDigest(v.Data)}
	if n, ok := history.ParseConfigData(v.Data); ok {
		m.Value = &n
	}
	return m
}

// A read changes nothing, so any error is a fail.
func (w *worker) readConfig(ctx context.Context, req Request) Message {
	rctx, cancel := context.WithTimeout(ctx, w.zkTimeout())
	defer cancel()
	v, err := w.conf.Read(rctx, req.Key)
	if err != nil {
		return Message{Type: Fail, Error: "read-config: " + err.Error()}
	}
	return versionMessage(OK, v)
}

func (w *worker) update(ctx context.Context, req Request) Message {
	if req.Value == nil {
		return Message{Type: Fail, Error: "update: missing value"}
	}
	exp := req.ExpectedVersion
	if exp == nil || *exp < 0 || *exp > math.MaxInt32 {
		return Message{Type: Fail, Value: req.Value, Error: "update: expected_version must be a znode version, 0 to 2^31-1"}
	}
	uctx, cancel := context.WithTimeout(ctx, w.zkTimeout())
	defer cancel()
	v, err := w.conf.Update(uctx, req.Key, history.ConfigData(*req.Value), int32(*exp))
	switch {
	case err == nil:
		m := versionMessage(OK, v)
		m.Value = req.Value
		return m
	case errors.Is(err, recipes.ErrUnknown):
		return Message{Type: Info, Value: req.Value, Error: err.Error()}
	default: // ErrBadVersion and the other definite refusals
		return Message{Type: Fail, Value: req.Value, Error: err.Error()}
	}
}

// watch answers the first version applied and only then lets the client
// report later ones, so no applied event precedes the answer it follows.
func (w *worker) watch(ctx context.Context, req Request) Message {
	wctx, cancel := context.WithTimeout(ctx, w.zkTimeout())
	defer cancel()
	v, start, err := w.conf.Watch(wctx, req.Key)
	if err != nil {
		return Message{Type: Fail, Error: err.Error()}
	}
	w.afterReply = start
	return versionMessage(OK, v)
}

// configMessage is the line for a config client's event.
func (w *worker) configMessage(ev recipes.ConfigEvent) Message {
	if v := ev.Applied; v != nil {
		m := versionMessage("", *v)
		m.Event, m.Key = EventApplied, v.Key
		return m
	}
	return w.sessionMessage(ev.Session)
}

func init() { registerSubject(recipes.WorkloadConfig, (*worker).newConfigSubject) }

// newConfigSubject builds the config client of cfg.Recipe.
func (w *worker) newConfigSubject(rc recipes.Config) error {
	c, err := recipes.NewConfig(w.cfg.Recipe, rc)
	if err != nil {
		return fmt.Errorf("config workload: %w", err)
	}
	w.conf = c
	w.closer = c.Close
	w.creds, _ = c.(recipes.SessionCredentials)
	w.events = translate(c.Events(), w.configMessage)
	w.handlers = w.configHandlers()
	return nil
}
