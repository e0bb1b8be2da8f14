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
	"sync"
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
	// Visualization is porcupine's page for a key that is not
	// linearizable, relative to the run folder.
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
// register model (regmodel.go) for the run's fencing mode.
func CheckRegister(ctx context.Context, in checker.Input) checker.Result {
	mode := in.Fencing
	if mode == "" {
		return checker.Result{Valid: checker.Unknown, Error: "the run's fencing mode is not known (test.json has no fencing): the register model depends on it"}
	}
	if !validFencing(mode) {
		return checker.Result{Valid: checker.Unknown, Error: fmt.Sprintf("unknown fencing mode %q", mode)}
	}
	h := splitHistory(in.History)
	m := regModel{mode: mode}
	d := &LinearDetails{Model: fmt.Sprintf("fenced register, mode %s, plus the lock's promises (token order, no lost update)", mode),
		Fencing: mode}
	return checkLinear(ctx, in, NameRegister, h, h.register, d, m.porcupine)
}

// CheckMutex checks the lock operations of the history against an
// owner-aware mutex (mutexmodel.go).
func CheckMutex(ctx context.Context, in checker.Input) checker.Result {
	h := splitHistory(in.History)
	d := &LinearDetails{Model: "owner-aware mutex per key (acquire, release, lost)", Note: mutexNote}
	return checkLinear(ctx, in, NameMutex, h, h.mutex, d,
		func(c context.Context) porcupine.Model { return mutexModel(c, h.procs) })
}

func validFencing(m string) bool {
	switch m {
	case "on", "off", "strict":
		return true
	}
	return false
}

// checkLinear runs porcupine on every partition within the budget, then
// draws the failing ones. Partitions are checked one per call rather than
// through porcupine's Partition hook so that each key gets its own
// verdict, time and page, and a pool of GOMAXPROCS goroutines keeps one
// slow key from starving the rest of the machine.
//
// Verdict: false if some key was proven not linearizable (a proof found
// within the budget stands, Jepsen's false-over-unknown), else unknown if
// the budget or ctx ended before every key was decided, else true.
func checkLinear(ctx context.Context, in checker.Input, name string, h *linHistory, parts map[string]*partition,
	d *LinearDetails, model func(context.Context) porcupine.Model) checker.Result {
	if in.Budget > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, in.Budget)
		defer cancel()
		d.BudgetMS = float64(in.Budget) / float64(time.Millisecond)
	}
	d.Keys = map[string]PartitionResult{}
	d.FailingKeys = []string{}
	d.Excluded = h.excluded
	d.UnmatchedCompletions = h.unmatched
	keys := make([]string, 0, len(parts))
	for k, p := range parts {
		if len(p.ops) > 0 {
			keys = append(keys, k)
		}
	}
	// Biggest first, so the pool is not left waiting on one late giant.
	slices.SortFunc(keys, func(a, b string) int {
		return cmp.Or(cmp.Compare(len(parts[b].ops), len(parts[a].ops)), cmp.Compare(a, b))
	})

	results := make([]PartitionResult, len(keys))
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(runtime.GOMAXPROCS(0), max(1, len(keys))) {
		wg.Go(func() {
			for i := range next {
				results[i] = checkPartition(ctx, parts[keys[i]], model)
			}
		})
	}
	for i := range keys {
		next <- i
	}
	close(next)
	wg.Wait()

	for i, k := range keys {
		r := results[i]
		p := parts[k]
		d.Partitions++
		d.Operations += r.Operations
		d.InfoOperations += r.Info
		switch r.Valid {
		case checker.Invalid:
			d.FailingKeys = append(d.FailingKeys, k)
			if in.Dir != "" {
				rel, err := visualize(ctx, in.Dir, name, p, h, model)
				if err != nil {
					r.VisualizationError = err.Error()
				} else {
					r.Visualization = rel
					if d.Visualizations == nil {
						d.Visualizations = map[string]string{}
					}
					d.Visualizations[k] = rel
				}
			}
		case checker.Unknown:
			d.UnknownKeys = append(d.UnknownKeys, k)
		}
		d.Keys[k] = r
	}
	slices.Sort(d.FailingKeys)
	slices.Sort(d.UnknownKeys)

	res := checker.Result{Details: d}
	switch {
	case len(d.FailingKeys) > 0:
		res.Valid = checker.Invalid
		res.Error = fmt.Sprintf("not linearizable: keys %s", strings.Join(d.FailingKeys, ", "))
	case len(d.UnknownKeys) > 0:
		res.Valid = checker.Unknown
		res.Error = fmt.Sprintf("undecided within the budget (%v): keys %s", context.Cause(ctx), strings.Join(d.UnknownKeys, ", "))
	default:
		res.Valid = checker.Valid
	}
	return res
}

// checkPartition decides one key. The model's steps fail once ctx ends,
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
	for _, set := range [][]porcupine.Annotation{h.nemesis, h.sessions} {
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
