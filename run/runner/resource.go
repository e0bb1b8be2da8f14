package runner

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkchaos/zkchaos/client/subjects"
	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/internal/setting"
	"github.com/zkchaos/zkchaos/resource/pgfence"
	"github.com/zkchaos/zkchaos/resource/register"
)

// Values of Config.Resource: what the locks protect.
const (
	// ResourceRegister is `chaos register`, the HTTP register.
	ResourceRegister = "register"
	// ResourcePostgres is PostgreSQL running the conditional UPDATE
	// of docs/background.md#why-a-lock-needs-a-fence (package pgfence).
	ResourcePostgres = "postgres"
)

// fencedResource is the run's fenced resource as the controller drives
// it, whichever --resource names: started before the workers, told to
// them as protocol flags, read by the final phase, watched for an exit
// during the run, and stopped in teardown, after which the run's apply
// log (store.ApplyLogFile, the register's format) is complete.
type fencedResource interface {
	// where sets the protocol flags that tell a worker where it is.
	where(f *subjects.Flags)
	// reader is the controller's own access (token-less final reads,
	// the final state).
	reader(timeout time.Duration) resourceReader
	// exited is closed when the resource stopped working on its own;
	// exitError says why.
	exited() <-chan struct{}
	isStopping() bool
	exitError() error
	// shut stops it; an error means its apply log may be incomplete.
	shut(grace time.Duration) error
}

// resourceReader is what the controller reads from the resource.
type resourceReader interface {
	Read(ctx context.Context, req register.ReadRequest) (register.Reply, error)
	State(ctx context.Context) (map[string]register.KeyState, error)
}

// The register as a fencedResource.
func (r *registerProc) where(f *subjects.Flags) { f.Register = r.url() }
func (r *registerProc) reader(timeout time.Duration) resourceReader {
	return r.client(timeout)
}
func (r *registerProc) exited() <-chan struct{} { return r.done }
func (r *registerProc) isStopping() bool        { return r.stopping.Load() }
func (r *registerProc) shut(grace time.Duration) error {
	r.stop(grace)
	return nil
}

// pgResource is PostgreSQL as the run's fenced resource: the server in
// its own namespace of the run, and the exporter that copies its audit
// table into the run's apply log while the run goes.
type pgResource struct {
	srv    *pgfence.Server
	exp    *pgfence.Exporter
	stopEx context.CancelFunc
	exDone chan struct{}
	exErr  error // the exporter's, set before exDone closes
	// down closes when the server exits or the export fails.
	down     chan struct{}
	downOnce sync.Once
	stop     atomic.Bool
	password string
}

// exportPoll is how often the audit table is copied to the apply log:
// the online checks (and --stop-at-first) see a violation this late.
const exportPoll = 200 * time.Millisecond

// startPostgres starts the server in a namespace named pg and the export
// of its audit table into the run's apply log.
func (s *services) startPostgres(ctx context.Context, password string) (*pgResource, error) {
	if s.net == nil {
		return nil, fmt.Errorf("%s %s needs the run's network namespaces", setting.Name("Resource"), ResourcePostgres)
	}
	host, err := s.net.AddHost(ctx, "pg")
	if err != nil {
		return nil, fmt.Errorf("namespace for postgres: %w", err)
	}
	srv, err := pgfence.Start(ctx, pgfence.ServerConfig{Dir: s.run.Path(store.PostgresDir), Host: host, Env: s.env,
		Password: password, Mode: s.cfg.Fencing})
	if err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	p := &pgResource{srv: srv, password: password, down: make(chan struct{}), exDone: make(chan struct{})}
	cfg, err := srv.ConnConfig(5 * time.Second)
	if err == nil {
		p.exp, err = pgfence.NewExporter(ctx, cfg, s.run.Path(store.ApplyLogFile))
	}
	if err != nil {
		srv.Stop(5 * time.Second)
		return nil, err
	}
	exCtx, stop := context.WithCancel(context.Background())
	p.stopEx = stop
	go func() {
		p.exErr = p.exp.Follow(exCtx, exportPoll)
		close(p.exDone)
		if p.exErr != nil {
			p.downOnce.Do(func() { close(p.down) })
		}
	}()
	go func() {
		<-srv.Done()
		p.downOnce.Do(func() { close(p.down) })
	}()
	return p, nil
}

func (p *pgResource) where(f *subjects.Flags) { f.Postgres = p.srv.DSN }

func (p *pgResource) reader(timeout time.Duration) resourceReader {
	c, err := pgfence.NewClient(p.srv.DSN, p.password, timeout)
	if err != nil {
		return failedReader{err}
	}
	return oneShot{c}
}

func (p *pgResource) exited() <-chan struct{} { return p.down }
func (p *pgResource) isStopping() bool        { return p.stop.Load() }

func (p *pgResource) exitError() error {
	select {
	case <-p.exDone:
		if p.exErr != nil {
			return fmt.Errorf("postgres: the export of the audit table failed: %w", p.exErr)
		}
	default:
	}
	return fmt.Errorf("postgres exited during the run: %w", p.srv.ExitError())
}

// shut ends the export after a last copy of everything committed, then
// stops the server and removes its data directory (the apply log holds
// the audit; the server's log stays).
func (p *pgResource) shut(grace time.Duration) error {
	p.stop.Store(true)
	p.stopEx()
	<-p.exDone
	err := p.exErr
	if cerr := p.exp.Close(); err == nil {
		err = cerr
	}
	p.srv.Stop(grace)
	if err != nil {
		return fmt.Errorf("postgres: the apply log may be incomplete: %w", err)
	}
	return p.srv.RemoveData()
}

// oneShot is a pgfence client used for one call and closed.
type oneShot struct{ c *pgfence.Client }

func (o oneShot) Read(ctx context.Context, req register.ReadRequest) (register.Reply, error) {
	defer o.c.Close()
	return o.c.Read(ctx, req)
}

func (o oneShot) State(ctx context.Context) (map[string]register.KeyState, error) {
	defer o.c.Close()
	return o.c.State(ctx)
}

// failedReader answers every call with the error that made it.
type failedReader struct{ err error }

func (f failedReader) Read(context.Context, register.ReadRequest) (register.Reply, error) {
	return register.Reply{}, f.err
}

func (f failedReader) State(context.Context) (map[string]register.KeyState, error) {
	return nil, f.err
}
