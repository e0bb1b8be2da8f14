package config

import (
	"context"
	"fmt"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/lockview"
	"github.com/zkchaos/zkchaos/history"
)

// Kinds of config-consistent violations.
const (
	// KindUnwritten: a client applied a (version, digest) pair nobody
	// wrote.
	KindUnwritten = "unwritten"
	// KindConflictingDigest: one version of a config was seen with two
	// different data: by two clients, or by a client and the acknowledged
	// update that wrote that version.
	KindConflictingDigest = "conflicting-digest"
)

// Inconsistency is one applied pair that is not the config's.
type Inconsistency struct {
	Kind    string `json:"kind"`
	Process int    `json:"process"`
	Key     string `json:"key"`
	Version int64  `json:"version"`
	Digest  string `json:"digest"`
	TimeNS  int64  `json:"time_ns"`
	Index   int64  `json:"index"`
	// Other is the digest the version had before (conflicting-digest),
	// as OtherSource saw it (a client process or an update).
	Other       string `json:"other_digest,omitempty"`
	OtherSource string `json:"other_source,omitempty"`
	Message     string `json:"message"`
}

// ConsistentDetails is the evidence of config-consistent.
type ConsistentDetails struct {
	Applied int `json:"applied"`
	// OKUpdates and UnknownUpdates count the updates whose (version,
	// digest) are written, and those whose data may have been (info or
	// open: their digest is computed from the value they wrote).
	OKUpdates            int             `json:"ok_updates"`
	UnknownUpdates       int             `json:"unknown_updates"`
	Unversioned          int             `json:"unversioned,omitempty"`
	Violations           []Inconsistency `json:"violations"`
	ViolationCount       int             `json:"violation_count"`
	ViolationsOmitted    int             `json:"violations_omitted,omitempty"`
	FirstViolationTimeNS *int64          `json:"first_violation_time_ns,omitempty"`
	Note                 string          `json:"note,omitempty"`
}

// source is who first gave a version a digest.
type source struct {
	digest string
	who    string
}

// keyWrites is what was (or may have been) written to one config key.
type keyWrites struct {
	byVersion map[int64][]source // ok updates
	unknown   map[string]bool    // digests of info and open updates
}

// CheckConsistent judges every pair a client applied (its watch's first
// and each applied event): it must have been written, that is be the
// (version, digest) of an ok update, or version 0 (the initial config,
// whatever its data), or carry the digest of the data of an update whose
// outcome is unknown (history.ConfigDigest(history.ConfigData(n))), which may have been
// written under any version. One version has one data: a version seen
// with two digests (by two clients, or by a client and the ok update that
// wrote it) is a violation too, which also makes all clients agree on the
// initial config.
func CheckConsistent(ctx context.Context, in checker.Input) checker.Result {
	v := viewOf(in.History)
	d := ConsistentDetails{Applied: len(v.applies), Unversioned: v.unversioned}
	writes := map[string]*keyWrites{}
	for _, o := range v.updates {
		w := writes[o.Key]
		if w == nil {
			w = &keyWrites{byVersion: map[int64][]source{}, unknown: map[string]bool{}}
			writes[o.Key] = w
		}
		w.note(o, &d)
	}
	seen := map[string]map[int64]source{} // per key, the first client digest of each version
	reported := map[Inconsistency]bool{}  // conflicts, once per (key, version, digest)
	var ev evidence[Inconsistency]
	for i, a := range v.applies {
		if i&0xffff == 0 && ctx.Err() != nil {
			return checker.Cancelled(ctx)
		}
		w := writes[a.Key]
		if w == nil {
			w = &keyWrites{}
		}
		if !w.written(a) {
			ev.add(in.Limit(), unwritten(a), a.Time)
			continue
		}
		if seen[a.Key] == nil {
			seen[a.Key] = map[int64]source{}
		}
		prev, ok := w.conflict(a, seen[a.Key])
		if !ok {
			continue
		}
		k := Inconsistency{Key: a.Key, Version: a.Version, Digest: a.Digest}
		if !reported[k] {
			reported[k] = true
			ev.add(in.Limit(), conflicting(a, prev), a.Time)
		}
	}
	d.Violations, d.ViolationCount, d.ViolationsOmitted, d.FirstViolationTimeNS = ev.violations(), ev.count, ev.omitted, ev.first
	if d.Applied == 0 {
		d.Note = "no client applied a version"
	}
	if ev.count == 0 {
		return checker.Result{Valid: checker.Valid, Details: d}
	}
	return checker.Result{Valid: checker.Invalid, Details: d,
		Error: fmt.Sprintf("%d applied config versions were not the data written: first: %s", ev.count, d.Violations[0].Message)}
}

// note records what update o wrote, or may have written.
func (w *keyWrites) note(o lockview.Op, d *ConsistentDetails) {
	if ver, dig, ok := written(o); ok {
		d.OKUpdates++
		w.byVersion[ver] = append(w.byVersion[ver], source{dig, fmt.Sprintf("the update of process %d answered at %s", o.Process, checker.Seconds(o.Done))})
		return
	}
	if unknownOutcome(o) && o.Invoked != nil && o.Invoked.N != nil {
		d.UnknownUpdates++
		w.unknown[history.ConfigDigest(history.ConfigData(*o.Invoked.N))] = true
	}
}

// written applies the rule of CheckConsistent.
func (w *keyWrites) written(a applied) bool {
	if a.Version == 0 || w.unknown[a.Digest] {
		return true
	}
	for _, s := range w.byVersion[a.Version] {
		if s.digest == a.Digest {
			return true
		}
	}
	return false
}

// conflict finds another digest of a's version: an ok update's (when a's
// digest is none of them), else the first a client applied. It records
// a's digest as the version's first client digest when there was none.
func (w *keyWrites) conflict(a applied, seen map[int64]source) (source, bool) {
	ups := w.byVersion[a.Version]
	if len(ups) > 0 && !containsDigest(ups, a.Digest) {
		return ups[0], true
	}
	first, ok := seen[a.Version]
	if !ok {
		seen[a.Version] = source{a.Digest, fmt.Sprintf("process %d at %s", a.Process, checker.Seconds(a.Time))}
		return source{}, false
	}
	return first, first.digest != a.Digest
}

func containsDigest(ss []source, digest string) bool {
	for _, s := range ss {
		if s.digest == digest {
			return true
		}
	}
	return false
}

func unwritten(a applied) Inconsistency {
	return Inconsistency{Kind: KindUnwritten, Process: int(a.Process), Key: a.Key, Version: a.Version, Digest: a.Digest,
		TimeNS: a.Time, Index: a.Index,
		Message: fmt.Sprintf("process %d applied version %d of %q with digest %q at %s, which no update wrote (no ok update wrote that pair, no update with an unknown outcome wrote that data)",
			a.Process, a.Version, a.Key, a.Digest, checker.Seconds(a.Time))}
}

func conflicting(a applied, prev source) Inconsistency {
	return Inconsistency{Kind: KindConflictingDigest, Process: int(a.Process), Key: a.Key, Version: a.Version, Digest: a.Digest,
		TimeNS: a.Time, Index: a.Index, Other: prev.digest, OtherSource: prev.who,
		Message: fmt.Sprintf("process %d applied version %d of %q with digest %q at %s, but that version has digest %q (%s): one version, two data",
			a.Process, a.Version, a.Key, a.Digest, checker.Seconds(a.Time), prev.digest, prev.who)}
}
