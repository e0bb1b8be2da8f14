package history

// Fault verbs: the f of nemesis operations. Every fault has a start verb
// and a stop verb; the checkers and the report read fault windows from the
// history by these pairs, so a fault declares its verbs here and nowhere
// else (a verb unknown to this list would be drawn as lasting only its
// injection).
const (
	// FPause and FResume: SIGSTOP of a process (worker or server), SIGCONT.
	FPause  = "pause"
	FResume = "resume"
	// FKill and FRestart: a server killed with SIGKILL, and started again
	// with its data.
	FKill    = "kill"
	FRestart = "restart"
	// FPartition and FHeal: traffic cut by rules, and the rules removed.
	FPartition = "partition"
	FHeal      = "heal"
	// FIsolate: one worker cut off from every server (ended by FHeal).
	FIsolate = "isolate"
	// FExpire and FExpireEnd: a worker's session closed from outside; the
	// end undoes nothing (a closed session stays closed) and records how
	// the worker came back.
	FExpire    = "expire"
	FExpireEnd = "expire-end"
	// FRogue and FRogueEnd: an unauthenticated client tampers with the
	// lock roots (delete the parent, forge a lock node, reset the
	// sequence); the end records what the tampering left.
	FRogue    = "rogue"
	FRogueEnd = "rogue-end"
	// FLostReply and FLostReplyEnd: the register executes a share of the
	// task calls and drops their replies, until the end.
	FLostReply    = "lost-reply"
	FLostReplyEnd = "lost-reply-end"
	// FRestore is the final phase's sweep of whatever fault is left
	// (process nemesis), before the final reads. It is not a fault of its
	// own and has no stop verb.
	FRestore = "restore"
	// FSessionGone is an observation, not a fault: the nemesis saw on the
	// servers that a worker's session no longer exists (recorded as an
	// instant operation of the nemesis, with TargetProcess and Session).
	FSessionGone = "session-gone"
)

// FaultVerbs is one fault's start and stop verb.
type FaultVerbs struct{ Start, Stop string }

// Faults lists the verb pair of every fault kind. Several faults may share
// a pair (pause-holder, pause-worker, pause-zk all pause and resume).
var Faults = []FaultVerbs{
	{FPause, FResume},
	{FKill, FRestart},
	{FPartition, FHeal},
	{FIsolate, FHeal},
	{FExpire, FExpireEnd},
	{FRogue, FRogueEnd},
	{FLostReply, FLostReplyEnd},
}

// StopVerb is the stop verb of a fault's start verb; false if start starts
// no fault.
func StopVerb(start string) (string, bool) {
	for _, p := range Faults {
		if p.Start == start {
			return p.Stop, true
		}
	}
	return "", false
}

// IsFaultStart reports whether f starts a fault.
func IsFaultStart(f string) bool {
	_, ok := StopVerb(f)
	return ok
}

// IsFaultStop reports whether f ends a fault.
func IsFaultStop(f string) bool {
	for _, p := range Faults {
		if p.Stop == f {
			return true
		}
	}
	return false
}
