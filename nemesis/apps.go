package nemesis

import (
	"context"
	"fmt"

	"github.com/zkchaos/zkchaos/history"
)

// Application-leader faults: the application's leader is not ZooKeeper's
// (docs/background.md#leader-election), and the two are faulted apart. In the election workload
// the holder view of a client is its leadership (Holding from its
// campaign's ok until it resigns or is demoted, with its term as the
// token; Critical while a task's work is under way), so these are the
// holder faults aimed at the current application leader, under names of
// their own and for that workload only.
func init() {
	for name, mk := range map[string]func() Fault{
		"pause-app-leader":   func() Fault { return pauseHolder{} },
		"expire-app-leader":  func() Fault { return expireHolder{} },
		"isolate-app-leader": func() Fault { return isolateHolder{} },
	} {
		register(name, mk)
		requires(name, needWorkload("election"))
	}
	requireNetns("isolate-app-leader")
	selects("pause-app-leader", "the application leader in its critical section (the leader at all after 1s)")
	selects("expire-app-leader", "the application leader just past its check (the leader at all, with a session, after 3s)")
	selects("isolate-app-leader", "the application leader before or just after its check (the leader at all after 3s)")
	register("lost-reply", func() Fault { return lostReply{share: lostReplyShare} })
	requires("lost-reply", needWorkload("election"))
	selects("lost-reply", "the register's task calls")
}

// Resource is what the nemesis may do to the run's fenced resource.
type Resource interface {
	// SetLostReply makes the resource drop the reply of a share of its
	// task calls after executing them (0 turns it off).
	SetLostReply(ctx context.Context, share float64) error
}

// lostReplyShare is the share of task calls whose reply is dropped while
// lost-reply is in effect.
const lostReplyShare = 0.3

// lostReply makes the resource execute task calls and drop their replies
// (the connection closed without an answer), so clients retry a call that
// did happen: with idempotency the retry finds the stored result, without
// it the task runs twice: fencing does not help, as the retry carries a
// valid term (docs/background.md#exactly-once-effects).
type lostReply struct{ share float64 }

func (lostReply) Verbs() (string, string) { return history.FLostReply, history.FLostReplyEnd }

func (l lostReply) Inject(ctx context.Context, env *Env) (*Effect, error) {
	if env.Resource == nil {
		return nil, fmt.Errorf("%w: the run has no resource to drop replies", ErrNoTarget)
	}
	v := history.Value{Target: "the register's task calls"}
	undo := func(ctx context.Context) (history.Value, error) {
		u := v
		if err := env.Resource.SetLostReply(ctx, 0); err != nil {
			return u, err
		}
		u.Detail = "the register answers every call again (share 0 acknowledged)"
		return u, nil
	}
	if err := env.Resource.SetLostReply(ctx, l.share); err != nil {
		return &Effect{Value: v, Undo: undo}, err
	}
	v.Detail = fmt.Sprintf("the register acknowledged dropping the reply of %.0f%% of task calls after executing them", 100*l.share)
	return &Effect{Value: v, Undo: undo}, nil
}
