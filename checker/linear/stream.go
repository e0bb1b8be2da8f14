package linear

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/stream"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/resource/register"
)

// StreamConfig configures a Stream.
type StreamConfig struct {
	// Checker is NameRegister or NameMutex.
	Checker string
	// Fencing is the register's mode (register only).
	Fencing string
	// Dir is the run folder, where the pages of failing keys are written
	// by Result; empty writes none.
	Dir string
	// SegmentBudget bounds porcupine on one segment (unknown beyond);
	// zero leaves only the stream's ctx.
	SegmentBudget time.Duration
	// MaxSegmentOps bounds a key's open segment (DefaultMaxSegmentOps
	// when 0; negative: no bound): a key that finds no cut within it is
	// given up, unknown.
	MaxSegmentOps int
}

// keptNotes is how many nemesis and session events a bounded Stream keeps
// to annotate its pages: the pages of a long soak show the last faults
// only.
const keptNotes = 1024

// Violation is a segment porcupine found not linearizable.
type Violation struct {
	Checker string `json:"checker"`
	Key     string `json:"key"`
	// Segment is the key's segment, from 0; From and To its first
	// invocation and last finite return (run clock, ns).
	Segment    int   `json:"segment"`
	From       int64 `json:"from_ns"`
	To         int64 `json:"to_ns"`
	Operations int   `json:"operations"`
}

func (v Violation) String() string {
	return fmt.Sprintf("%s: key %s is not linearizable in segment %d (%s..%s, %d operations)",
		v.Checker, v.Key, v.Segment, checker.Seconds(v.From), checker.Seconds(v.To), v.Operations)
}

// Stream is the segmented check of one model (register or mutex), fed the
// history event by event as it is written (Add), the apply log as it is
// committed (Applied) and the exits of worker processes (Exited); each
// segment is checked when it closes, so memory holds only the keys' open
// segments. The batch checkers (CheckRegister, CheckMutex) are a Stream
// fed the whole history. Not safe for concurrent use.
type Stream struct {
	ctx  context.Context
	cfg  StreamConfig
	sp   *splitter
	g    *segmenter
	pool chan *segment
	wg   sync.WaitGroup
	// mu guards the checked results (pool workers write them).
	mu         sync.Mutex
	found      []Violation
	unresolved int
	result     *checker.Result
}

var _ stream.Checker[history.Event, Violation] = (*Stream)(nil)

// NewStream starts a segmented check; ctx bounds every check it runs
// (the interface of checker/stream has no ctx per item).
func NewStream(ctx context.Context, cfg StreamConfig) (*Stream, error) {
	if cfg.MaxSegmentOps == 0 {
		cfg.MaxSegmentOps = DefaultMaxSegmentOps
	}
	return newStream(ctx, cfg, true, 0)
}

// newStream with workers > 0 checks closed segments on that many
// goroutines (the batch form: Add then never reports a violation).
func newStream(ctx context.Context, cfg StreamConfig, cuts bool, workers int) (*Stream, error) {
	var m segModel
	switch cfg.Checker {
	case NameRegister:
		if cfg.Fencing == "" {
			return nil, errors.New("the run's fencing mode is not known (test.json has no fencing): the register model depends on it")
		}
		if !validFencing(cfg.Fencing) {
			return nil, fmt.Errorf("unknown fencing mode %q", cfg.Fencing)
		}
		m = regSeg{regModel{mode: cfg.Fencing}}
	case NameMutex:
		m = mutexSeg{}
	default:
		return nil, fmt.Errorf("no segmented check named %q (%s or %s)", cfg.Checker, NameRegister, NameMutex)
	}
	s := &Stream{ctx: ctx, cfg: cfg}
	s.g = newSegmenter(cfg.Checker, m, cuts, cfg.MaxSegmentOps, s.closed)
	s.sp = newSplitter(s.g)
	if cfg.MaxSegmentOps > 0 {
		s.sp.keepNotes = keptNotes
	}
	if ms, ok := m.(mutexSeg); ok {
		ms.procs = s.sp.hproc
		s.g.m = ms
	}
	if workers > 0 {
		s.pool = make(chan *segment, 2*workers)
		for range workers {
			s.wg.Go(func() {
				for seg := range s.pool {
					s.check(seg)
				}
			})
		}
	}
	return s, nil
}

// Name is the checker's name, as in results.json.
func (s *Stream) Name() string { return s.cfg.Checker }

// Add takes the next history event and returns the violations of the
// segments it closed.
func (s *Stream) Add(e history.Event) []Violation {
	// Time first: what returned before e is closed, and e has not opened
	// anything yet.
	s.g.advance(e.Time)
	s.sp.event(e)
	return s.take()
}

// Applied takes the next apply-log entry, in commit order (register
// only; the mutex ignores it).
func (s *Stream) Applied(e register.Entry) { s.sp.applied(e) }

// Exited says that the worker of history process p has exited at run
// time at (ns, the history's clock): no request of it can reach the
// register any more, and every apply-log entry committed so far was given
// to Applied. Its info reads and writes are then resolved against the
// apply log (resolve.go), which lets their keys be cut. It returns the
// violations of the segments that closed.
func (s *Stream) Exited(p history.Process, at int64) []Violation {
	s.g.advance(at)
	s.mu.Lock()
	s.unresolved += s.sp.resolve(p, at)
	s.mu.Unlock()
	return s.take()
}

func (s *Stream) take() []Violation {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.found
	s.found = nil
	return v
}

func (s *Stream) closed(seg *segment) {
	if s.pool != nil {
		s.pool <- seg
		return
	}
	s.check(seg)
}

// check runs porcupine on one closed segment from its start state.
func (s *Stream) check(seg *segment) {
	ctx := s.ctx
	if s.cfg.SegmentBudget > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.cfg.SegmentBudget)
		defer cancel()
	}
	r := checkPartition(ctx, seg.p, func(c context.Context) porcupine.Model { return s.g.m.from(c, seg.start) })
	s.mu.Lock()
	defer s.mu.Unlock()
	seg.t.chk.merge(seg, r)
	if r.Valid == checker.Invalid {
		s.found = append(s.found, Violation{Checker: s.cfg.Checker, Key: seg.key, Segment: seg.index,
			From: seg.p.from, To: seg.p.to, Operations: len(seg.p.ops)})
	}
}

// checked is what the checks of a key's segments found.
type checked struct {
	valid      checker.Validity
	segments   int
	operations int
	info       int
	maxConc    int
	elapsedMS  float64
	err        string
	// fail is the first segment found not linearizable, kept for its
	// page.
	fail *segment
}

func (c *checked) merge(seg *segment, r PartitionResult) {
	if c.segments == 0 {
		c.valid = checker.Valid
	}
	c.segments++
	c.operations += r.Operations
	c.info += r.Info
	c.maxConc = max(c.maxConc, r.MaxConcurrency)
	c.elapsedMS += r.ElapsedMS
	switch r.Valid {
	case checker.Invalid:
		c.valid = checker.Invalid
		if c.fail == nil || seg.index < c.fail.index {
			c.fail = seg
		}
	case checker.Unknown:
		if c.valid != checker.Invalid {
			c.valid = checker.Unknown
		}
		if c.err == "" {
			c.err = fmt.Sprintf("segment %d: %s", seg.index, r.Error)
		}
	}
}

// keyResult is what the segmenter itself says of a key.
type keyResult struct {
	largest int
	// operations counts those of a given-up segment (never checked).
	operations int
	givenUp    string
	uncut      string
	// err: the key's cuts cannot be trusted (unknown).
	err string
}
