package resources

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"runtime/metrics"
	"sync"
	"time"

	"github.com/zkchaos/zkchaos/internal/jsonl"
)

// Target is a process to sample.
type Target struct {
	Role string
	ID   int
	PID  int
}

// Config is what a sampler watches and where it writes.
type Config struct {
	// Interval is the sampling interval (> 0).
	Interval time.Duration
	// Clock is the run's clock (history.Writer.Since).
	Clock func() int64
	// Path is resources.jsonl.
	Path string
	// Targets lists the processes to sample now; the controller itself is
	// always sampled first.
	Targets func(ctx context.Context) []Target
	// Servers gives each server's counts now (Server.DataBytes is filled
	// in here); nil samples no server.
	Servers func(ctx context.Context) []Server
	// DataDirs are a server's data directories by its id.
	DataDirs func(id int) []string
	// OnSample, when set, is given each sample once it is written (the
	// soak's metrics).
	OnSample func(Sample)
	Logger   *slog.Logger
}

// Sampler samples until Stop.
type Sampler struct {
	cfg    Config
	out    *jsonl.Writer
	cancel context.CancelFunc
	done   chan struct{}

	mu   sync.Mutex
	last *Sample
}

// Start opens the file and samples at once, then every interval, until
// Stop or ctx ends.
func Start(ctx context.Context, cfg Config) (*Sampler, error) {
	if cfg.Interval <= 0 || cfg.Clock == nil || cfg.Targets == nil {
		return nil, errors.New("resources: needs an interval, the run's clock and the targets")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	out, err := jsonl.Create(cfg.Path, "resources", false)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &Sampler{cfg: cfg, out: out, cancel: cancel, done: make(chan struct{})}
	go s.loop(ctx)
	return s, nil
}

// Last is the latest sample written, if any. Safe on a nil Sampler.
func (s *Sampler) Last() (Sample, bool) {
	if s == nil {
		return Sample{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last == nil {
		return Sample{}, false
	}
	return *s.last, true
}

// Stop ends sampling, closes the file and returns the first error writing
// it (the samples before it are kept). Safe on a nil Sampler and twice.
func (s *Sampler) Stop() error {
	if s == nil {
		return nil
	}
	s.cancel()
	<-s.done
	return s.out.Close()
}

func (s *Sampler) loop(ctx context.Context) {
	defer close(s.done)
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
	for seq := 0; ; seq++ {
		smp := s.take(ctx, seq)
		if ctx.Err() != nil {
			return // stopped mid-sample: what it holds is the stop
		}
		if err := s.out.Write(smp); err != nil {
			s.cfg.Logger.Warn("resources: sample not written; the sampler writes no more", "err", err)
		}
		s.mu.Lock()
		s.last = &smp
		s.mu.Unlock()
		if s.cfg.OnSample != nil {
			s.cfg.OnSample(smp)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// take is one sample: the controller, the targets, the servers.
func (s *Sampler) take(ctx context.Context, seq int) Sample {
	t0 := time.Now()
	smp := Sample{Seq: seq, TimeNS: s.cfg.Clock(), Wall: t0.UnixNano()}
	ctl := Measure(ctx, RoleController, 0, os.Getpid())
	ctl.HeapLive = heapLive()
	smp.Procs = append(smp.Procs, ctl)
	for _, tg := range s.cfg.Targets(ctx) {
		smp.Procs = append(smp.Procs, Measure(ctx, tg.Role, tg.ID, tg.PID))
	}
	if s.cfg.Servers != nil {
		smp.Servers = s.cfg.Servers(ctx)
		for i := range smp.Servers {
			if s.cfg.DataDirs != nil {
				smp.Servers[i].DataBytes = DirSize(s.cfg.DataDirs(smp.Servers[i].ID)...)
			}
		}
	}
	smp.TookNS = int64(time.Since(t0))
	return smp
}

// heapLive is this process's live heap as of its last GC.
func heapLive() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
