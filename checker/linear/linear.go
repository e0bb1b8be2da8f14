package linear

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/zkchaos/zkchaos/checker"

	"github.com/anishathalye/porcupine"
)

// Names of the linearizability checkers.
const (
	NameRegister = "register"
	NameMutex    = "mutex"
)

// VisualDir is the folder, inside the run folder, of porcupine's pages.
const VisualDir = "porcupine"

// mutexNote is said on every mutex result, valid or not, because the
// answer is only meaningful with it.
const mutexNote = "Under SIGSTOP of a holder no lease-based lock stays a linearizable mutex: ZooKeeper expires the paused " +
	"holder's session and grants the lock to another client while the paused one still believes it holds it (it learns " +
	"only when it wakes up). That is why fencing exists; this checker does not gate by default."

// PartitionResult is one key's answer.
type PartitionResult struct {
	Valid      checker.Validity `json:"valid"`
	Operations int              `json:"operations"`
	// Info counts the operations with unknown outcome (return at infinity).
	Info int `json:"info"`
	// MaxConcurrency is the most operations open at one instant (info
	// operations stay open to the end): what porcupine's search is
	// exponential in.
	MaxConcurrency int     `json:"max_concurrency"`
	ElapsedMS      float64 `json:"elapsed_ms"`
	// Segments is how many segments the key was cut into (segment.go),
	// LargestSegment the operations of the largest: what porcupine had to
	// hold at once.
	Segments       int `json:"segments,omitempty"`
	LargestSegment int `json:"largest_segment,omitempty"`
	// Uncut says why the key's last segment could not be cut (an
	// operation open to the end) or why the key was given up.
	Uncut string `json:"uncut,omitempty"`
	// Visualization is porcupine's page for a key that is not
	// linearizable (its first failing segment), relative to the run
	// folder.
	Visualization      string `json:"visualization,omitempty"`
	VisualizationError string `json:"visualization_error,omitempty"`
	Error              string `json:"error,omitempty"`
}

// LinearDetails is the evidence of the register and mutex checkers.
type LinearDetails struct {
	// Model says in one line what was checked (the code's comments and
	// docs/architecture.md say it precisely).
	Model   string `json:"model"`
	Fencing string `json:"fencing,omitempty"`
	// Partitions is the number of keys checked.
	Partitions     int      `json:"partitions"`
	Operations     int      `json:"operations"`
	InfoOperations int      `json:"info_operations"`
	FailingKeys    []string `json:"failing_keys"`
	UnknownKeys    []string `json:"unknown_keys,omitempty"`
	// Segments counts the segments checked over all keys; UncutKeys are
	// the keys with an operation open to the end or given up
	// (PartitionResult.Uncut says which).
	Segments  int      `json:"segments,omitempty"`
	UncutKeys []string `json:"uncut_keys,omitempty"`
	// Unresolved counts info operations the apply log could not resolve
	// (streaming only).
	Unresolved int `json:"unresolved,omitempty"`
	// Visualizations maps each failing key to its page, relative to the
	// run folder.
	Visualizations map[string]string          `json:"visualizations,omitempty"`
	Keys           map[string]PartitionResult `json:"keys"`
	// Excluded counts operations left out of the model, by reason (they
	// are annotations in the pages).
	Excluded             map[string]int `json:"excluded,omitempty"`
	UnmatchedCompletions int            `json:"unmatched_completions,omitempty"`
	BudgetMS             float64        `json:"budget_ms,omitempty"`
	Note                 string         `json:"note,omitempty"`
}

// CheckRegister checks the register operations of the history against the
// register model (regmodel.go) for the run's fencing mode, key by key in
// segments (segment.go).
func CheckRegister(ctx context.Context, in checker.Input) checker.Result {
	return checkBatch(ctx, in, NameRegister, true)
}

// CheckMutex checks the lock operations of the history against an
// owner-aware mutex (mutexmodel.go), key by key in segments.
func CheckMutex(ctx context.Context, in checker.Input) checker.Result {
	return checkBatch(ctx, in, NameMutex, true)
}

func validFencing(m string) bool {
	switch m {
	case "on", "off", "strict":
		return true
	}
	return false
}

// checkBatch is the Stream fed the whole history, its closed segments
// checked by a pool of GOMAXPROCS goroutines (one slow segment does not
// starve the rest), within in.Budget. cuts false checks each key whole
// (the tests' reference). The apply log is not used: the history does not
// say when a worker exited, so no info operation can be resolved before
// the end, where it would cut nothing.
func checkBatch(ctx context.Context, in checker.Input, name string, cuts bool) checker.Result {
	var budgetMS float64
	if in.Budget > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, in.Budget)
		defer cancel()
		budgetMS = float64(in.Budget) / float64(time.Millisecond)
	}
	s, err := newStream(ctx, StreamConfig{Checker: name, Fencing: in.Fencing, Dir: in.Dir, MaxSegmentOps: -1}, cuts,
		min(runtime.GOMAXPROCS(0), 8))
	if err != nil {
		return checker.Result{Valid: checker.Unknown, Error: err.Error()}
	}
	for _, e := range in.History {
		s.Add(e)
	}
	r := s.finish(ctx)
	var d *LinearDetails
	if dd, ok := r.Details.(*LinearDetails); ok {
		d = dd
		d.BudgetMS = budgetMS
	}
	if r.Valid == checker.Unknown && ctx.Err() != nil && d != nil && len(d.UnknownKeys) > 0 {
		r.Error = fmt.Sprintf("undecided within the budget (%v): keys %s", context.Cause(ctx), strings.Join(d.UnknownKeys, ", "))
	}
	return r
}

// Result ends the stream: what is still open returns at infinity, every
// key's last segment is checked, the pages of failing keys are drawn, and
// the verdict is false if some segment was proven not linearizable (a
// proof stands, false over unknown), else unknown if a segment was not
// decided or a key was given up, else true. Add must not be called after.
func (s *Stream) Result() checker.Result { return s.finish(s.ctx) }

func (s *Stream) finish(ctx context.Context) checker.Result {
	if s.result != nil {
		return *s.result
	}
	s.sp.finish()
	s.g.finish()
	if s.pool != nil {
		close(s.pool)
		s.wg.Wait()
	}
	r := s.build(ctx)
	s.result = &r
	return r
}

func (s *Stream) model() string {
	if s.cfg.Checker == NameMutex {
		return "owner-aware mutex per key (acquire, release, lost)"
	}
	return fmt.Sprintf("fenced register, mode %s, plus the lock's promises (token order, no lost update)", s.cfg.Fencing)
}

func (s *Stream) build(ctx context.Context) checker.Result {
	h := s.sp.h
	d := &LinearDetails{Model: s.model(), Keys: map[string]PartitionResult{}, FailingKeys: []string{},
		Excluded: h.excluded, UnmatchedCompletions: h.unmatched, Unresolved: s.unresolved}
	if s.cfg.Checker == NameMutex {
		d.Note = mutexNote
	} else {
		d.Fencing = s.cfg.Fencing
	}
	for k, t := range s.g.keys {
		r, ok := s.keyResult(t)
		if !ok {
			continue
		}
		d.Partitions++
		d.Segments += r.Segments
		d.Operations += r.Operations
		d.InfoOperations += r.Info
		if r.Uncut != "" {
			d.UncutKeys = append(d.UncutKeys, k)
		}
		switch r.Valid {
		case checker.Invalid:
			d.FailingKeys = append(d.FailingKeys, k)
			if s.cfg.Dir != "" {
				s.draw(ctx, d, &r, t.chk.fail)
			}
		case checker.Unknown:
			d.UnknownKeys = append(d.UnknownKeys, k)
		}
		d.Keys[k] = r
	}
	slices.Sort(d.FailingKeys)
	slices.Sort(d.UnknownKeys)
	slices.Sort(d.UncutKeys)
	res := checker.Result{Details: d}
	switch {
	case len(d.FailingKeys) > 0:
		res.Valid = checker.Invalid
		res.Error = fmt.Sprintf("not linearizable: keys %s", strings.Join(d.FailingKeys, ", "))
	case len(d.UnknownKeys) > 0:
		res.Valid = checker.Unknown
		res.Error = fmt.Sprintf("undecided: keys %s", strings.Join(d.UnknownKeys, ", "))
	default:
		res.Valid = checker.Valid
	}
	return res
}

// keyResult is a key's answer from its checked segments and what the
// segmenter says; false for a key without operations.
func (s *Stream) keyResult(t *keyTrack) (PartitionResult, bool) {
	c := t.chk
	if c.segments == 0 && t.res.givenUp == "" {
		return PartitionResult{}, false
	}
	r := PartitionResult{Valid: c.valid, Operations: c.operations + t.res.operations, Info: c.info, MaxConcurrency: c.maxConc,
		ElapsedMS: c.elapsedMS, Segments: c.segments, LargestSegment: t.res.largest, Uncut: t.res.uncut, Error: c.err}
	if c.segments == 0 {
		r.Valid = checker.Unknown
	}
	if t.res.givenUp != "" {
		r.Uncut = t.res.givenUp
		if r.Valid != checker.Invalid {
			r.Valid = checker.Unknown
		}
		r.Error = strings.TrimPrefix(r.Error+"; "+t.res.givenUp, "; ")
	}
	if t.res.err != "" {
		r.Valid = checker.Unknown
		r.Error = strings.TrimPrefix(r.Error+"; "+t.res.err, "; ")
	}
	return r, true
}

// draw writes the page of a key's first failing segment.
func (s *Stream) draw(ctx context.Context, d *LinearDetails, r *PartitionResult, seg *segment) {
	if seg == nil {
		return
	}
	rel, err := visualize(ctx, s.cfg.Dir, s.cfg.Checker, seg.p, s.sp.h,
		func(c context.Context) porcupine.Model { return s.g.m.from(c, seg.start) })
	if err != nil {
		r.VisualizationError = err.Error()
		return
	}
	r.Visualization = rel
	if d.Visualizations == nil {
		d.Visualizations = map[string]string{}
	}
	d.Visualizations[seg.key] = rel
}

// checkPartition decides one segment of a key. The model's steps fail once ctx ends,
// which makes porcupine give up quickly but also makes a "not
// linearizable" answer meaningless, so that answer is kept only if ctx
// was still live when porcupine returned (ctx never comes back to life).
// "Linearizable" is always sound: a failing step can only remove
// linearizations, never invent one.
func checkPartition(ctx context.Context, p *partition, model func(context.Context) porcupine.Model) (r PartitionResult) {
	r = PartitionResult{Operations: len(p.ops), Info: p.info, MaxConcurrency: maxConcurrency(p.ops), Valid: checker.Unknown}
	start := time.Now()
	defer func() { r.ElapsedMS = float64(time.Since(start)) / float64(time.Millisecond) }()
	timeout, ok := remaining(ctx)
	if !ok {
		r.Error = fmt.Sprintf("not started: %v", context.Cause(ctx))
		return r
	}
	res := porcupine.CheckOperationsTimeout(model(ctx), p.ops, timeout)
	live := ctx.Err() == nil
	switch {
	case res == porcupine.Ok:
		r.Valid = checker.Valid
	case res == porcupine.Illegal && live:
		r.Valid = checker.Invalid
	case live:
		r.Error = "porcupine timed out"
	default:
		r.Error = fmt.Sprintf("stopped: %v", context.Cause(ctx))
	}
	return r
}

// remaining is porcupine's timeout for ctx's deadline (0: none), and false
// when ctx has already ended.
func remaining(ctx context.Context) (time.Duration, bool) {
	if ctx.Err() != nil {
		return 0, false
	}
	dl, ok := ctx.Deadline()
	if !ok {
		return 0, true
	}
	left := time.Until(dl)
	if left <= 0 {
		return 0, false
	}
	return left, true
}

// maxConcurrency sweeps the operations' intervals.
func maxConcurrency(ops []porcupine.Operation) int {
	type edge struct {
		t     int64
		delta int
	}
	es := make([]edge, 0, 2*len(ops))
	for _, o := range ops {
		es = append(es, edge{o.Call, 1}, edge{o.Return, -1})
	}
	// Intervals are closed: at equal times, calls count before returns.
	slices.SortFunc(es, func(a, b edge) int { return cmp.Or(cmp.Compare(a.t, b.t), cmp.Compare(b.delta, a.delta)) })
	n, best := 0, 0
	for _, e := range es {
		n += e.delta
		best = max(best, n)
	}
	return best
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// visualize re-checks a failing key with porcupine's verbose mode and
// writes its page with the nemesis windows and session events of the
// key's time span, and the operations left out of the model, as
// annotations. It returns the page's path relative to dir.
func visualize(ctx context.Context, dir, name string, p *partition, h *linHistory, model func(context.Context) porcupine.Model) (rel string, err error) {
	timeout, ok := remaining(ctx)
	if !ok {
		return "", fmt.Errorf("no budget left to draw key %s: %v", p.key, context.Cause(ctx))
	}
	res, info := porcupine.CheckOperationsVerbose(model(ctx), p.ops, timeout)
	if res != porcupine.Illegal || ctx.Err() != nil {
		return "", fmt.Errorf("redraw of key %s gave %s (budget: %v)", p.key, res, context.Cause(ctx))
	}
	var notes []porcupine.Annotation
	to := p.to
	if to < p.from {
		to = Infinity // every operation of the key is unknown
	}
	for _, set := range [][]porcupine.Annotation{h.nemesisNotes(), h.sessions} {
		for _, a := range set {
			if a.End >= p.from && a.Start <= to {
				notes = append(notes, a)
			}
		}
	}
	notes = append(notes, p.notes...)
	info.AddAnnotations(notes)

	rel = filepath.Join(VisualDir, fmt.Sprintf("%s-%s.html", name, unsafeName.ReplaceAllString(p.key, "_")))
	path := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("visualisation of key %s: %w", p.key, err)
	}
	defer func() {
		// porcupine panics if a replayed step fails; that would be a bug
		// in a model, and must not take the checker down with it.
		if x := recover(); x != nil {
			err = fmt.Errorf("visualisation of key %s: porcupine panicked: %v", p.key, x)
		}
	}()
	if err := porcupine.VisualizePath(model(nil), info, path); err != nil {
		return "", fmt.Errorf("visualisation of key %s: %w", p.key, err)
	}
	return rel, nil
}
